/* Record futures outside the cycle collector, compiled: a type with a record's two fields.
 *
 * A producer keeps one future per record until its batch is acknowledged, often hundreds of thousands. A
 * class defined in Python is always allocated as a collectable object: even untracked at once, each
 * allocation counts towards the next collection, so a loop of sends ran a young collection every 700
 * records and a full one every few hundred thousand, scanning the whole heap (about 15 % of the producer's
 * time). Instances of this type are plain objects: allocated without the collector, never scanned.
 *
 * new_type() makes a fresh such type each call; delivery.py gives it RecordFuture's methods. That is safe
 * because a record future refers only to its batch's outcome, and the outcome refers back to it only
 * through the callbacks and waiters it drops when the batch is settled (acknowledged or failed), which the
 * producer always does: on acknowledgement, error, delivery timeout or close.
 *
 * result() is compiled too, for the case a loop reading every record's metadata meets: a batch stored whole,
 * nothing of it cancelled. Then its outcome's `_ack` holds (RecordMetadata, topic, partition, base offset,
 * log-append time, timestamps); otherwise `_ack` is None and the method written in Python (`_result_slow`)
 * answers, with its errors. metadata_at(ack, index) makes the same metadata from such an `_ack` alone, for the
 * blocking producer's futures, which keep the `_ack` and their place instead of a RecordMetadata each.
 *
 * Without this extension delivery.py uses RecordFuture as written in Python (collectable as usual).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *outcome;
    Py_ssize_t index;
} RecordFutureObject;

static PyObject *future_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, "RecordFuture takes no keyword arguments");
        return NULL;
    }
    if (PyTuple_GET_SIZE(args) != 2) {
        PyErr_SetString(PyExc_TypeError, "RecordFuture takes (outcome, index)");
        return NULL;
    }
    Py_ssize_t index = PyLong_AsSsize_t(PyTuple_GET_ITEM(args, 1));
    if (index == -1 && PyErr_Occurred()) {
        return NULL;
    }
    RecordFutureObject *self = (RecordFutureObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->outcome = Py_NewRef(PyTuple_GET_ITEM(args, 0));
    self->index = index;
    return (PyObject *)self;
}

static void future_dealloc(RecordFutureObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    Py_CLEAR(self->outcome);
    type->tp_free((PyObject *)self);
    Py_DECREF(type); /* an instance of a heap type holds a reference to it */
}

static PyObject *str_ack;         /* "_ack" */
static PyObject *str_result_slow; /* "_result_slow" */

/* The RecordMetadata of the record at `index` of a batch acknowledged as `ack` says; NULL with no error set when
 * `ack` is not such a tuple or the offset would overflow (the caller's written code answers then). */
static PyObject *metadata_of(PyObject *ack, Py_ssize_t index) {
    if (!PyTuple_CheckExact(ack) || PyTuple_GET_SIZE(ack) != 6 || !PyType_Check(PyTuple_GET_ITEM(ack, 0))) {
        return NULL;
    }
    PyTypeObject *metadata_type = (PyTypeObject *)PyTuple_GET_ITEM(ack, 0);
    PyObject *offset = NULL, *timestamp = NULL, *metadata = NULL;
    long long base_offset = PyLong_AsLongLong(PyTuple_GET_ITEM(ack, 3));
    if (base_offset == -1 && PyErr_Occurred()) goto done;
    long long log_append_time = PyLong_AsLongLong(PyTuple_GET_ITEM(ack, 4));
    if (log_append_time == -1 && PyErr_Occurred()) goto done;
    long long record_offset = -1;
    if (base_offset >= 0 && __builtin_add_overflow(base_offset, (long long)index, &record_offset)) {
        return NULL;
    }
    offset = PyLong_FromLongLong(record_offset);
    if (offset == NULL) goto done;
    timestamp = log_append_time < 0 ? PySequence_GetItem(PyTuple_GET_ITEM(ack, 5), index)
                                    : PyLong_FromLongLong(log_append_time);
    if (timestamp == NULL) goto done;
    /* The named tuple made as tuple.__new__ makes a subclass's: allocated with its four slots, then filled. */
    metadata = metadata_type->tp_alloc(metadata_type, 4);
    if (metadata == NULL) goto done;
    PyTuple_SET_ITEM(metadata, 0, Py_NewRef(PyTuple_GET_ITEM(ack, 1)));
    PyTuple_SET_ITEM(metadata, 1, Py_NewRef(PyTuple_GET_ITEM(ack, 2)));
    PyTuple_SET_ITEM(metadata, 2, offset);
    PyTuple_SET_ITEM(metadata, 3, timestamp);
    offset = timestamp = NULL;
    /* A str and three ints cannot close a cycle: left to reference counting, as the decoder's records are. */
    PyObject_GC_UnTrack(metadata);
done:
    Py_XDECREF(offset);
    Py_XDECREF(timestamp);
    return metadata;
}

static PyObject *future_result(RecordFutureObject *self, PyObject *unused) {
    (void)unused;
    PyObject *ack = PyObject_GetAttr(self->outcome, str_ack);
    if (ack == NULL) return NULL;
    PyObject *metadata = metadata_of(ack, self->index);
    Py_DECREF(ack);
    if (metadata == NULL && !PyErr_Occurred()) {
        return PyObject_CallMethodNoArgs((PyObject *)self, str_result_slow);
    }
    return metadata;
}

static PyMethodDef future_methods[] = {
    {"result", (PyCFunction)future_result, METH_NOARGS,
     "The record's RecordMetadata; raises the batch's error, CancelledError when cancelled, and "
     "asyncio.InvalidStateError while not done."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef future_members[] = {
    {"_outcome", T_OBJECT_EX, offsetof(RecordFutureObject, outcome), READONLY, "the outcome of the record's batch"},
    {"_index", T_PYSSIZET, offsetof(RecordFutureObject, index), READONLY, "the record's place in its batch"},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot future_slots[] = {
    {Py_tp_new, future_new},
    {Py_tp_dealloc, future_dealloc},
    {Py_tp_members, future_members},
    {Py_tp_methods, future_methods},
    {0, NULL},
};

/* No Py_TPFLAGS_HAVE_GC (the point of it); no Py_TPFLAGS_IMMUTABLETYPE, so the methods can be set. */
static PyType_Spec future_spec = {
    .name = "kafkawire.delivery.RecordFuture",
    .basicsize = sizeof(RecordFutureObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = future_slots,
};

static PyObject *new_type(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    return PyType_FromSpec(&future_spec);
}

static PyObject *metadata_at(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "metadata_at takes (ack, index)");
        return NULL;
    }
    Py_ssize_t index = PyLong_AsSsize_t(args[1]);
    if (index == -1 && PyErr_Occurred()) return NULL;
    PyObject *metadata = metadata_of(args[0], index);
    if (metadata == NULL && !PyErr_Occurred()) {
        PyErr_SetString(PyExc_ValueError, "not an acknowledged batch's _ack, or an offset past int64");
    }
    return metadata;
}

static PyMethodDef module_methods[] = {
    {"new_type", new_type, METH_NOARGS,
     "A new type of record future outside the cycle collector: its two read-only fields and result()."},
    {"metadata_at", (PyCFunction)(void (*)(void))metadata_at, METH_FASTCALL,
     "The RecordMetadata of the record at index of the batch whose outcome's _ack is given."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_delivery_speedups", NULL, 0, module_methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__delivery_speedups(void) {
    if (str_ack == NULL && (str_ack = PyUnicode_InternFromString("_ack")) == NULL) return NULL;
    if (str_result_slow == NULL && (str_result_slow = PyUnicode_InternFromString("_result_slow")) == NULL) {
        return NULL;
    }
    return PyModule_Create(&module);
}
