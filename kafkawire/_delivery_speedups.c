/* The storage of a record's future, compiled: two fields and no place in the cycle collector.
 *
 * delivery.py builds RecordFuture on RecordFutureBase(outcome, index). A producer keeps one such future per
 * record until its batch is acknowledged, often hundreds of thousands; tracked by the cycle collector, each
 * would be scanned again by every collection while it waits. This base leaves its instances untracked. That
 * is safe because a record future refers only to its batch's outcome, and the outcome refers back to it
 * only through the callbacks and waiters it drops when the batch is settled (acknowledged or failed), which
 * the producer always does: on acknowledgement, error, delivery timeout or close.
 *
 * Without this extension delivery.py uses a Python class with the same two fields (tracked as usual).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *outcome;
    Py_ssize_t index;
} RecordFutureBase;

static PyObject *base_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, "RecordFutureBase takes no keyword arguments");
        return NULL;
    }
    if (PyTuple_GET_SIZE(args) != 2) {
        PyErr_SetString(PyExc_TypeError, "RecordFutureBase takes (outcome, index)");
        return NULL;
    }
    Py_ssize_t index = PyLong_AsSsize_t(PyTuple_GET_ITEM(args, 1));
    if (index == -1 && PyErr_Occurred()) {
        return NULL;
    }
    RecordFutureBase *self = (RecordFutureBase *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    PyObject_GC_UnTrack(self);
    self->outcome = Py_NewRef(PyTuple_GET_ITEM(args, 0));
    self->index = index;
    return (PyObject *)self;
}

static int base_traverse(RecordFutureBase *self, visitproc visit, void *arg) {
    Py_VISIT(self->outcome);
    return 0;
}

static int base_clear(RecordFutureBase *self) {
    Py_CLEAR(self->outcome);
    return 0;
}

static void base_dealloc(RecordFutureBase *self) {
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->outcome);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef base_members[] = {
    {"_outcome", T_OBJECT_EX, offsetof(RecordFutureBase, outcome), READONLY, "the outcome of the record's batch"},
    {"_index", T_PYSSIZET, offsetof(RecordFutureBase, index), READONLY, "the record's place in its batch"},
    {NULL},
};

static PyTypeObject RecordFutureBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkawire._delivery_speedups.RecordFutureBase",
    .tp_doc = "A record's batch outcome and place in it, not tracked by the cycle collector.",
    .tp_basicsize = sizeof(RecordFutureBase),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = base_new,
    .tp_dealloc = (destructor)base_dealloc,
    .tp_traverse = (traverseproc)base_traverse,
    .tp_clear = (inquiry)base_clear,
    .tp_members = base_members,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_delivery_speedups", NULL, 0, NULL};

PyMODINIT_FUNC PyInit__delivery_speedups(void) {
    if (PyType_Ready(&RecordFutureBaseType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "RecordFutureBase", (PyObject *)&RecordFutureBaseType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
