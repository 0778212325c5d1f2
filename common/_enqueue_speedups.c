/* A blocking producer's per-record steps, compiled: ``EnqueueQueue.put_value`` (mqwire.common.blocking_enqueue),
 * and ``RecordFuture``'s settling and ``result`` (mqwire.common.blocking_future).
 *
 * A script that enqueues half a million records a second spends most of its own thread's time in the few
 * Python calls each record takes to reach the queue: the bridge's checks, the record's future, the append and
 * the flags read after it. ``ValuePut`` does the same steps in one C call. It holds what never changes for its
 * queue (the list, its bound, the loop thread, the bridge's fork generation) and reads what does (the flags)
 * for every record, in the order the Python code reads them. Any record off the common way (a check that
 * fails, a full or closed queue, no drain scheduled, the caller's turn to yield) takes the Python code, which
 * raises the same errors and waits the same way.
 *
 * ``BytesEnqueue`` is a blocking producer's ``enqueue`` for the record users send most: one value of bytes and
 * nothing else, with no value serializer to run. It hands that value to the ValuePut without a Python frame, an
 * argument tuple or a keyword dictionary (which cost a script a third of its time per record); any other call
 * goes to the Python ``enqueue`` it was given.
 *
 * RecordFuture keeps its attributes in slots, which these steps read and write in place. ``install`` learns
 * where they are; the loop thread then starts and settles a batch's futures in one walk each (``start_many``,
 * ``finish_many_lazily``: the futures without a condition, under the same shared lock the Python code takes,
 * the rest left to it; then ``release_callbacks`` for those whose callbacks ran), a caller's callback on a
 * pending future is kept by a compiled ``add_done_callback``, and the caller reads each future's result with a
 * compiled ``result`` for a future settled with a receipt (kept whole or made when asked for). Any other future
 * (with a condition, failed, cancelled, asked with more than a timeout) is answered by the method written in
 * Python.
 *
 * Without this extension (or with MQWIRE_PURE_PYTHON set) all of them are the Python code alone.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "pythread.h"
#include <stddef.h>
#ifndef Py_T_OBJECT_EX /* before 3.12: the members' kinds are in structmember.h */
#include "structmember.h"
#define Py_T_OBJECT_EX T_OBJECT_EX
#endif

/* RecordFuture keeps its attributes in slots (see mqwire.common.blocking_future): where each is in the object,
 * learned from the class by install(), and the values its steps compare and store. */
static Py_ssize_t at_state, at_result, at_exception, at_made_condition, at_done_callbacks, at_lazy, at_place;
static PyTypeObject *future_class; /* RecordFuture, once install() ran */
static PyObject *state_pending, *state_running, *state_finished, *no_callbacks;

#define SLOT(object, at) (*(PyObject **)((char *)(object) + (at)))

/* Store a new reference to ``value`` in the slot, releasing what was there. */
static void set_slot(PyObject *object, Py_ssize_t at, PyObject *value) {
    PyObject *old = SLOT(object, at);
    SLOT(object, at) = Py_NewRef(value);
    Py_XDECREF(old);
}

/* Whether the state in a slot (never NULL) is ``wanted``: the module's own strings, else compared as text. */
static int state_is(PyObject *state, PyObject *wanted) {
    if (state == wanted) {
        return 1;
    }
    return PyUnicode_Check(state) && PyUnicode_Compare(state, wanted) == 0;
}

/* The offset of the slot ``name`` of ``cls``, or -1 with an error set. */
static Py_ssize_t slot_offset(PyObject *cls, const char *name) {
    PyObject *described = PyObject_GetAttrString(cls, name);
    if (described == NULL) {
        return -1;
    }
    Py_ssize_t offset = -1;
    if (Py_IS_TYPE(described, &PyMemberDescr_Type) &&
        ((PyMemberDescrObject *)described)->d_member->type == Py_T_OBJECT_EX) {
        offset = ((PyMemberDescrObject *)described)->d_member->offset;
    } else {
        PyErr_Format(PyExc_TypeError, "RecordFuture.%s must be a slot", name);
    }
    Py_DECREF(described);
    return offset;
}

/* Whether ``future`` is a RecordFuture with every slot set (a subclass's __init__ that skipped RecordFuture's
 * leaves some unset: those futures take the Python methods). */
static int slots_set(PyObject *future) {
    return PyObject_TypeCheck(future, future_class) && SLOT(future, at_state) != NULL &&
           SLOT(future, at_result) != NULL && SLOT(future, at_exception) != NULL &&
           SLOT(future, at_made_condition) != NULL && SLOT(future, at_done_callbacks) != NULL &&
           SLOT(future, at_lazy) != NULL && SLOT(future, at_place) != NULL;
}

/* The queue holds its ValuePut: the ValuePut refers to it weakly (and to its methods as functions), so that a
 * queue, and the client it belongs to, dropped unclosed are still freed at once rather than by the collector. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *queue;        /* a weak reference to the EnqueueQueue, whose _closed and _scheduled are read */
    PyObject *records;      /* its list of records, three items each (never replaced) */
    Py_ssize_t limit;       /* the items it holds before callers wait */
    Py_ssize_t yield_items; /* the items after which a caller yields the interpreter lock (3 * YIELD_EVERY) */
    PyObject *bridge;       /* its Bridge: _closed is read for each record */
    unsigned long loop_thread;
    PyObject *generation;   /* the bridge's fork generation */
    PyObject *affinity;     /* the namespace of mqwire.common.affinity, whose _generation counts this process's forks */
    /* Where the flags read for each record are kept, when in slots (-1: read as attributes). */
    Py_ssize_t at_bridge_closed, at_queue_closed, at_queue_scheduled;
    PyObject *future_type;  /* RecordFuture or a subclass */
    PyObject *put;          /* its class's Python _put(queue, value, None): every record off the common way */
    PyObject *schedule;     /* its class's _schedule(queue): a drain to start after the append */
    PyObject *yield_now;    /* time.sleep */
} ValuePut;

static PyObject *str_closed, *str_scheduled, *str_generation, *zero;
static PyObject *result_in_python; /* RecordFuture.result as written in Python, once install() ran */

/* 1 when the attribute ``name`` of ``owner`` is true, 0 when false, -1 on error: read in place from its slot
 * at ``at`` (learned by flag_slot) when it has one and it is set, as an attribute otherwise. */
static int flag(PyObject *owner, Py_ssize_t at, PyObject *name) {
    if (at >= 0) {
        PyObject *kept = SLOT(owner, at);
        if (kept == Py_True) {
            return 1;
        }
        if (kept == Py_False) {
            return 0;
        }
        if (kept != NULL) {
            return PyObject_IsTrue(kept);
        }
    }
    PyObject *value = PyObject_GetAttr(owner, name);
    if (value == NULL) {
        return -1;
    }
    int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

/* The offset of the slot in which instances of ``owner``'s class keep ``name``; -1 when they keep it elsewhere
 * (in their dictionary, or behind a property), or on an error (then set). */
static Py_ssize_t flag_slot(PyObject *owner, PyObject *name) {
    PyObject *described = PyObject_GetAttr((PyObject *)Py_TYPE(owner), name);
    if (described == NULL) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
        }
        return -1;
    }
    Py_ssize_t offset = -1;
    if (Py_IS_TYPE(described, &PyMemberDescr_Type) &&
        ((PyMemberDescrObject *)described)->d_member->type == Py_T_OBJECT_EX &&
        PyType_IsSubtype(Py_TYPE(owner), PyDescr_TYPE(described))) {
        offset = ((PyMemberDescrObject *)described)->d_member->offset;
    }
    Py_DECREF(described);
    return offset;
}

/* 1 when a record may take the common way, 0 when the Python code must take it, -1 on error. */
static int common_way(ValuePut *self, PyObject *queue) {
    /* Bridge.check's conditions: not forked since the bridge started, not its loop thread, not closed. */
    PyObject *now = PyDict_GetItemWithError(self->affinity, str_generation); /* borrowed */
    if (now == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_AttributeError, "mqwire.common.affinity has no _generation");
        }
        return -1;
    }
    int same = now == self->generation ? 1 : PyObject_RichCompareBool(now, self->generation, Py_EQ);
    if (same <= 0) {
        return same;
    }
    if (PyThread_get_thread_ident() == self->loop_thread) {
        return 0;
    }
    int closed = flag(self->bridge, self->at_bridge_closed, str_closed);
    if (closed != 0) {
        return closed < 0 ? -1 : 0;
    }
    /* _put's: room in the queue, and the queue open. */
    if (PyList_GET_SIZE(self->records) >= self->limit) {
        return 0;
    }
    closed = flag(queue, self->at_queue_closed, str_closed);
    if (closed != 0) {
        return closed < 0 ? -1 : 0;
    }
    return 1;
}

/* RecordFuture() without the call of its __init__, whose steps are written here: every slot, then out of the
 * cycle collector's scans (see mqwire.common.blocking_future). */
static PyObject *new_future(ValuePut *self) {
    PyTypeObject *type = (PyTypeObject *)self->future_type;
    PyObject *no_args = PyTuple_New(0);
    if (no_args == NULL) {
        return NULL;
    }
    PyObject *future = type->tp_new(type, no_args, NULL);
    Py_DECREF(no_args);
    if (future == NULL) {
        return NULL;
    }
    set_slot(future, at_state, state_pending);
    set_slot(future, at_result, Py_None);
    set_slot(future, at_exception, Py_None);
    set_slot(future, at_made_condition, Py_None);
    set_slot(future, at_done_callbacks, no_callbacks);
    set_slot(future, at_lazy, Py_None);
    set_slot(future, at_place, zero);
    if (PyObject_IS_GC(future) && PyObject_GC_IsTracked(future)) {
        PyObject_GC_UnTrack(future);
    }
    return future;
}

static PyObject *put_value(ValuePut *self, PyObject *queue, PyObject *value);

/* put_value(value) on the ValuePut ``self``. */
static PyObject *value_put(ValuePut *self, PyObject *value) {
    PyObject *queue = NULL;
#if PY_VERSION_HEX >= 0x030D0000
    if (PyWeakref_GetRef(self->queue, &queue) < 0) {
        return NULL;
    }
#else
    queue = PyWeakref_GetObject(self->queue);
    if (queue == Py_None) {
        queue = NULL;
    }
    Py_XINCREF(queue);
#endif
    if (queue == NULL) {
        PyErr_SetString(PyExc_ReferenceError, "the queue of this put_value is gone");
        return NULL;
    }
    PyObject *future = put_value(self, queue, value);
    Py_DECREF(queue);
    return future;
}

static PyObject *ValuePut_vectorcall(ValuePut *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0) {
        PyErr_SetString(PyExc_TypeError, "put_value takes no keyword arguments");
        return NULL;
    }
    if (PyVectorcall_NARGS(nargsf) != 1) {
        PyErr_Format(PyExc_TypeError, "put_value takes one argument (%zd given)", PyVectorcall_NARGS(nargsf));
        return NULL;
    }
    return value_put(self, args[0]);
}

/* put_value with its queue alive (held by the caller). */
static PyObject *put_value(ValuePut *self, PyObject *queue, PyObject *value) {
    int common = common_way(self, queue);
    if (common < 0) {
        return NULL;
    }
    if (common == 0) {
        return PyObject_CallFunctionObjArgs(self->put, queue, value, Py_None, NULL);
    }
    PyObject *future = new_future(self);
    if (future == NULL) {
        return NULL;
    }
    /* The three items in a row, as _put's one extend: no Python code runs between these appends (a list's
     * growth allocates no object the collector could run a finalizer for), so no other thread sees a part. */
    Py_ssize_t before = PyList_GET_SIZE(self->records);
    if (PyList_Append(self->records, value) < 0 || PyList_Append(self->records, Py_None) < 0 ||
        PyList_Append(self->records, future) < 0) {
        /* Only a failed allocation gets here. The drain reads the list in threes: take back what went in. */
#if PY_VERSION_HEX >= 0x030C0000
        PyObject *raised = PyErr_GetRaisedException();
        PyList_SetSlice(self->records, before, PyList_GET_SIZE(self->records), NULL);
        PyErr_SetRaisedException(raised);
#else
        PyObject *error_type, *error_value, *error_traceback;
        PyErr_Fetch(&error_type, &error_value, &error_traceback);
        PyList_SetSlice(self->records, before, PyList_GET_SIZE(self->records), NULL);
        PyErr_Restore(error_type, error_value, error_traceback);
#endif
        Py_DECREF(future);
        return NULL;
    }
    /* The flags after the append, as _put reads them: the drain and close change them before they look at the
     * list again, so the record is either seen by the running drain or starts one here. */
    int scheduled = flag(queue, self->at_queue_scheduled, str_scheduled);
    int closed = scheduled < 0 ? -1 : flag(queue, self->at_queue_closed, str_closed);
    if (scheduled < 0 || closed < 0) {
        Py_DECREF(future);
        return NULL;
    }
    PyObject *done = NULL;
    if (!scheduled || closed) {
        done = PyObject_CallOneArg(self->schedule, queue);
    } else if (PyList_GET_SIZE(self->records) % self->yield_items == 0) {
        done = PyObject_CallOneArg(self->yield_now, zero);
    } else {
        return future;
    }
    if (done == NULL) {
        Py_DECREF(future);
        return NULL;
    }
    Py_DECREF(done);
    return future;
}

static int ValuePut_traverse(ValuePut *self, visitproc visit, void *arg) {
    Py_VISIT(self->queue);
    Py_VISIT(self->records);
    Py_VISIT(self->bridge);
    Py_VISIT(self->generation);
    Py_VISIT(self->affinity);
    Py_VISIT(self->future_type);
    Py_VISIT(self->put);
    Py_VISIT(self->schedule);
    Py_VISIT(self->yield_now);
    return 0;
}

static int ValuePut_clear(ValuePut *self) {
    Py_CLEAR(self->queue);
    Py_CLEAR(self->records);
    Py_CLEAR(self->bridge);
    Py_CLEAR(self->generation);
    Py_CLEAR(self->affinity);
    Py_CLEAR(self->future_type);
    Py_CLEAR(self->put);
    Py_CLEAR(self->schedule);
    Py_CLEAR(self->yield_now);
    return 0;
}

static void ValuePut_dealloc(ValuePut *self) {
    PyObject_GC_UnTrack(self);
    ValuePut_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int ValuePut_init(ValuePut *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"queue", "records", "limit", "yield_items", "bridge", "loop_thread", "generation",
                            "affinity", "future_type", "put", "schedule", "yield_now", NULL};
    PyObject *queue, *records, *bridge, *generation, *affinity, *future_type, *put, *schedule, *yield_now;
    Py_ssize_t limit, yield_items;
    unsigned long loop_thread;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!nnOkOOO!OOO", names, &queue, &PyList_Type, &records,
                                     &limit, &yield_items, &bridge, &loop_thread, &generation, &affinity,
                                     &PyType_Type, &future_type, &put, &schedule, &yield_now)) {
        return -1;
    }
    if (yield_items <= 0) {
        PyErr_SetString(PyExc_ValueError, "yield_items must be positive");
        return -1;
    }
    if (future_class == NULL || !PyType_IsSubtype((PyTypeObject *)future_type, future_class)) {
        PyErr_SetString(PyExc_TypeError, "future_type must be the installed RecordFuture or a subclass of it");
        return -1;
    }
    if (!PyModule_Check(affinity)) {
        PyErr_SetString(PyExc_TypeError, "affinity must be the module mqwire.common.affinity");
        return -1;
    }
    Py_ssize_t at_bridge_closed = flag_slot(bridge, str_closed);
    Py_ssize_t at_queue_closed = at_bridge_closed < 0 && PyErr_Occurred() ? -1 : flag_slot(queue, str_closed);
    Py_ssize_t at_queue_scheduled = PyErr_Occurred() ? -1 : flag_slot(queue, str_scheduled);
    if (PyErr_Occurred()) {
        return -1;
    }
    PyObject *queue_ref = PyWeakref_NewRef(queue, NULL);
    if (queue_ref == NULL) {
        return -1;
    }
    ValuePut_clear(self);
    self->at_bridge_closed = at_bridge_closed;
    self->at_queue_closed = at_queue_closed;
    self->at_queue_scheduled = at_queue_scheduled;
    self->vectorcall = (vectorcallfunc)ValuePut_vectorcall;
    self->queue = queue_ref;
    self->records = Py_NewRef(records);
    self->limit = limit;
    self->yield_items = yield_items;
    self->bridge = Py_NewRef(bridge);
    self->loop_thread = loop_thread;
    self->generation = Py_NewRef(generation);
    self->affinity = Py_NewRef(PyModule_GetDict(affinity));
    self->future_type = Py_NewRef(future_type);
    self->put = Py_NewRef(put);
    self->schedule = Py_NewRef(schedule);
    self->yield_now = Py_NewRef(yield_now);
    return 0;
}

static PyTypeObject ValuePutType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mqwire.common._enqueue_speedups.ValuePut",
    .tp_basicsize = sizeof(ValuePut),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "EnqueueQueue.put_value's common way in one call (see mqwire.common.blocking_enqueue).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)ValuePut_init,
    .tp_vectorcall_offset = offsetof(ValuePut, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)ValuePut_traverse,
    .tp_clear = (inquiry)ValuePut_clear,
    .tp_dealloc = (destructor)ValuePut_dealloc,
};

/* A blocking producer's enqueue: a value of bytes alone to its queue's ValuePut, any other call to ``general``.
 * It refers to neither the producer nor its queue (the ValuePut holds the queue weakly), so that storing it on
 * the producer makes no cycle: a producer dropped unclosed is still freed at once. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *put;     /* the queue's ValuePut */
    PyObject *general; /* general(args, kwargs): every other call, as the Python enqueue takes it */
} BytesEnqueue;

/* general(args, kwargs or None) with the arguments of a vectorcall. */
static PyObject *call_general(BytesEnqueue *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *positional = PyTuple_New(nargs);
    if (positional == NULL) {
        return NULL;
    }
    for (Py_ssize_t at = 0; at < nargs; at++) {
        PyTuple_SET_ITEM(positional, at, Py_NewRef(args[at]));
    }
    PyObject *named = PyDict_New();
    for (Py_ssize_t at = 0; named != NULL && kwnames != NULL && at < PyTuple_GET_SIZE(kwnames); at++) {
        if (PyDict_SetItem(named, PyTuple_GET_ITEM(kwnames, at), args[nargs + at]) < 0) {
            Py_CLEAR(named);
        }
    }
    if (named == NULL) {
        Py_DECREF(positional);
        return NULL;
    }
    PyObject *answer = PyObject_CallFunctionObjArgs(self->general, positional, named, NULL);
    Py_DECREF(positional);
    Py_DECREF(named);
    return answer;
}

static PyObject *BytesEnqueue_vectorcall(BytesEnqueue *self, PyObject *const *args, size_t nargsf,
                                         PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs == 1 && (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0) && PyBytes_CheckExact(args[0])) {
        return value_put((ValuePut *)self->put, args[0]);
    }
    return call_general(self, args, nargs, kwnames);
}

static int BytesEnqueue_traverse(BytesEnqueue *self, visitproc visit, void *arg) {
    Py_VISIT(self->put);
    Py_VISIT(self->general);
    return 0;
}

static int BytesEnqueue_clear(BytesEnqueue *self) {
    Py_CLEAR(self->put);
    Py_CLEAR(self->general);
    return 0;
}

static void BytesEnqueue_dealloc(BytesEnqueue *self) {
    PyObject_GC_UnTrack(self);
    BytesEnqueue_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int BytesEnqueue_init(BytesEnqueue *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"put", "general", NULL};
    PyObject *put, *general;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O", names, &ValuePutType, &put, &general)) {
        return -1;
    }
    if (!PyCallable_Check(general)) {
        PyErr_SetString(PyExc_TypeError, "general must be callable");
        return -1;
    }
    BytesEnqueue_clear(self);
    self->vectorcall = (vectorcallfunc)BytesEnqueue_vectorcall;
    self->put = Py_NewRef(put);
    self->general = Py_NewRef(general);
    return 0;
}

static PyTypeObject BytesEnqueueType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mqwire.common._enqueue_speedups.BytesEnqueue",
    .tp_basicsize = sizeof(BytesEnqueue),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A blocking producer's enqueue, compiled for a value of bytes alone (see "
              "mqwire.common.blocking_enqueue.bytes_enqueue).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)BytesEnqueue_init,
    .tp_vectorcall_offset = offsetof(BytesEnqueue, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)BytesEnqueue_traverse,
    .tp_clear = (inquiry)BytesEnqueue_clear,
    .tp_dealloc = (destructor)BytesEnqueue_dealloc,
};

/* RecordFuture.result, as written in Python, for ``self`` and the arguments of a vectorcall. */
static PyObject *result_written_in_python(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                          PyObject *kwnames) {
    if (nargs == 0 && kwnames == NULL) {
        return PyObject_Vectorcall(result_in_python, &self, 1, NULL);
    }
    /* Rare (a pending future waited on with a timeout): the arguments as they came, self first. */
    PyObject *positional = PyTuple_New(nargs + 1);
    if (positional == NULL) {
        return NULL;
    }
    PyTuple_SET_ITEM(positional, 0, Py_NewRef(self));
    for (Py_ssize_t at = 0; at < nargs; at++) {
        PyTuple_SET_ITEM(positional, at + 1, Py_NewRef(args[at]));
    }
    PyObject *named = NULL;
    if (kwnames != NULL) {
        named = PyDict_New();
        for (Py_ssize_t at = 0; named != NULL && at < PyTuple_GET_SIZE(kwnames); at++) {
            if (PyDict_SetItem(named, PyTuple_GET_ITEM(kwnames, at), args[nargs + at]) < 0) {
                Py_CLEAR(named);
            }
        }
        if (named == NULL) {
            Py_DECREF(positional);
            return NULL;
        }
    }
    PyObject *answer = PyObject_Call(result_in_python, positional, named);
    Py_DECREF(positional);
    Py_XDECREF(named);
    return answer;
}

/* RecordFuture.result: the receipt of a future settled with one (FINISHED, no error); anything else to the Python
 * method. A settled future's timeout does not matter. */
static PyObject *future_result(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    Py_ssize_t given = nargs + (kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames));
    if (given > 1 || !slots_set(self) || !state_is(SLOT(self, at_state), state_finished) ||
        SLOT(self, at_exception) != Py_None) {
        return result_written_in_python(self, args, nargs, kwnames);
    }
    PyObject *lazy = SLOT(self, at_lazy);
    if (lazy == Py_None) {
        return Py_NewRef(SLOT(self, at_result));
    }
    /* (read, source): the receipt is read(source, place), made each time it is asked for. */
    if (!PyTuple_Check(lazy) || PyTuple_GET_SIZE(lazy) != 2) {
        PyErr_SetString(PyExc_TypeError, "a record future's _lazy must be (read, source)");
        return NULL;
    }
    Py_INCREF(lazy); /* the read may run Python code: the tuple stays while it runs */
    PyObject *call[2] = {PyTuple_GET_ITEM(lazy, 1), SLOT(self, at_place)};
    Py_INCREF(call[1]);
    PyObject *receipt = PyObject_Vectorcall(PyTuple_GET_ITEM(lazy, 0), call, 2, NULL);
    Py_DECREF(call[1]);
    Py_DECREF(lazy);
    return receipt;
}

static PyMethodDef result_method = {
    "result", (PyCFunction)(void (*)(void))future_result, METH_FASTCALL | METH_KEYWORDS,
    "The record's receipt, as Future.result (compiled for a settled future; see mqwire.common.blocking_future)."};

/* ``lock.acquire()`` or ``lock.release()`` of the Python lock given: 0, or -1 with an error set. Acquired this
 * way a contended lock is waited for with the interpreter lock released, as Python code waits for it. */
static int lock_call(PyObject *lock, PyObject *name) {
    PyObject *done = PyObject_CallMethodNoArgs(lock, name);
    if (done == NULL) {
        return -1;
    }
    Py_DECREF(done);
    return 0;
}

static PyObject *str_acquire, *str_release;

/* 0 when ``futures`` is a list of RecordFutures with their slots set, -1 with an error otherwise. */
static int check_futures(PyObject *futures) {
    if (!PyList_Check(futures)) {
        PyErr_SetString(PyExc_TypeError, "futures must be a list");
        return -1;
    }
    for (Py_ssize_t at = 0; at < PyList_GET_SIZE(futures); at++) {
        if (!slots_set(PyList_GET_ITEM(futures, at))) {
            PyErr_SetString(PyExc_TypeError, "futures must be RecordFutures made by RecordFuture()");
            return -1;
        }
    }
    return 0;
}

/* RecordFuture.start_many's walk under the shared lock: (started, slow), whether each future started (its state
 * PENDING, now RUNNING) and the places of those with a condition, left to the Python code. */
static PyObject *start_many(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "start_many(futures, lock)");
        return NULL;
    }
    PyObject *futures = args[0], *lock = args[1];
    if (future_class == NULL || check_futures(futures) < 0) {
        if (future_class == NULL) {
            PyErr_SetString(PyExc_RuntimeError, "install() has not run");
        }
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(futures);
    PyObject *started = PyList_New(count);
    PyObject *slow = PyList_New(0);
    if (started == NULL || slow == NULL || lock_call(lock, str_acquire) < 0) {
        Py_XDECREF(started);
        Py_XDECREF(slow);
        return NULL;
    }
    int failed = 0;
    /* No Python code runs in this walk (the list cannot change under it): the futures' slots and the lists. */
    for (Py_ssize_t at = 0; at < count; at++) {
        PyObject *future = PyList_GET_ITEM(futures, at);
        PyObject *went = Py_False;
        if (SLOT(future, at_made_condition) == Py_None) {
            if (state_is(SLOT(future, at_state), state_pending)) {
                set_slot(future, at_state, state_running);
                went = Py_True;
            }
        } else {
            PyObject *place = PyLong_FromSsize_t(at);
            if (place == NULL || PyList_Append(slow, place) < 0) {
                Py_XDECREF(place);
                failed = 1;
            } else {
                Py_DECREF(place);
            }
        }
        PyList_SET_ITEM(started, at, Py_NewRef(went));
        if (failed) {
            for (Py_ssize_t rest = at + 1; rest < count; rest++) {
                PyList_SET_ITEM(started, rest, Py_NewRef(Py_False));
            }
            break;
        }
    }
    if (lock_call(lock, str_release) < 0 || failed) {
        Py_DECREF(started);
        Py_DECREF(slow);
        return NULL;
    }
    PyObject *answer = PyTuple_Pack(2, started, slow);
    Py_DECREF(started);
    Py_DECREF(slow);
    return answer;
}

/* RecordFuture.finish_many_lazily's walk under the shared lock: each future still PENDING or RUNNING and without
 * a condition is settled with ``lazy`` and its place (first + its index); returns (told, slow): the futures
 * settled that have callbacks to run, and the places of those with a condition, both left to the Python code. */
static PyObject *finish_many_lazily(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 4 || !PyLong_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "finish_many_lazily(futures, lazy, first: int, lock)");
        return NULL;
    }
    PyObject *futures = args[0], *lazy = args[1], *lock = args[3];
    Py_ssize_t first = PyLong_AsSsize_t(args[2]);
    if (first == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (future_class == NULL || check_futures(futures) < 0) {
        if (future_class == NULL) {
            PyErr_SetString(PyExc_RuntimeError, "install() has not run");
        }
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(futures);
    /* The places first, so that nothing can fail once the walk changes states. */
    PyObject *places = PyList_New(count);
    PyObject *told = PyList_New(0);
    PyObject *slow = PyList_New(0);
    if (places == NULL || told == NULL || slow == NULL) {
        goto fail;
    }
    for (Py_ssize_t at = 0; at < count; at++) {
        PyObject *place = PyLong_FromSsize_t(first + at);
        if (place == NULL) {
            goto fail;
        }
        PyList_SET_ITEM(places, at, place);
    }
    if (lock_call(lock, str_acquire) < 0) {
        goto fail;
    }
    int failed = 0;
    for (Py_ssize_t at = 0; at < count && !failed; at++) {
        PyObject *future = PyList_GET_ITEM(futures, at);
        if (SLOT(future, at_made_condition) != Py_None) {
            PyObject *place = PyLong_FromSsize_t(at);
            failed = place == NULL || PyList_Append(slow, place) < 0;
            Py_XDECREF(place);
            continue;
        }
        PyObject *state = SLOT(future, at_state);
        if (!state_is(state, state_pending) && !state_is(state, state_running)) {
            continue;
        }
        PyObject *callbacks = SLOT(future, at_done_callbacks);
        if (callbacks != no_callbacks && (!PyList_Check(callbacks) || PyList_GET_SIZE(callbacks) != 0)) {
            failed = PyList_Append(told, future) < 0;
        }
        set_slot(future, at_lazy, lazy);
        set_slot(future, at_place, PyList_GET_ITEM(places, at));
        set_slot(future, at_state, state_finished);
    }
    if (lock_call(lock, str_release) < 0 || failed) {
        goto fail;
    }
    Py_DECREF(places);
    PyObject *answer = PyTuple_Pack(2, told, slow);
    Py_DECREF(told);
    Py_DECREF(slow);
    return answer;
fail:
    Py_XDECREF(places);
    Py_XDECREF(told);
    Py_XDECREF(slow);
    return NULL;
}

static PyObject *add_in_python; /* RecordFuture.add_done_callback as written in Python, once install() ran */
static PyObject *shared_lock;   /* the lock every RecordFuture's condition-less state changes under */
static PyObject *str_callbacks_seen;

/* RecordFuture.add_done_callback's short way, as the Python method takes it: a pending future without a
 * condition keeps the callback in its list (made outside the collector's scans for a QueuedFuture, whose
 * _callbacks_seen is false; the future brought back into them otherwise). Every other case (a condition, a
 * settled future, a future whose slots were never set) goes to the Python method. */
static PyObject *future_add_done_callback(PyObject *self, PyObject *fn) {
    if (slots_set(self) && SLOT(self, at_made_condition) == Py_None) {
        PyObject *seen_flag = _PyType_Lookup(Py_TYPE(self), str_callbacks_seen); /* borrowed */
        int seen = seen_flag == NULL ? -1 : PyObject_IsTrue(seen_flag);
        if (seen < 0) {
            if (seen_flag == NULL) {
                PyErr_SetString(PyExc_AttributeError, "RecordFuture has no _callbacks_seen");
            }
            return NULL;
        }
        if (lock_call(shared_lock, str_acquire) < 0) {
            return NULL;
        }
        PyObject *state = SLOT(self, at_state);
        if (SLOT(self, at_made_condition) == Py_None &&
            (state_is(state, state_pending) || state_is(state, state_running))) {
            int failed = 0;
            if (seen && !PyObject_GC_IsTracked(self)) {
                PyObject_GC_Track(self);
            }
            PyObject *callbacks = SLOT(self, at_done_callbacks);
            if (callbacks == no_callbacks) {
                PyObject *made = PyList_New(1);
                failed = made == NULL;
                if (made != NULL) {
                    PyList_SET_ITEM(made, 0, Py_NewRef(fn));
                    if (!seen) {
                        PyObject_GC_UnTrack(made); /* held by this future alone, outside the scans too */
                    }
                    set_slot(self, at_done_callbacks, made);
                    Py_DECREF(made);
                }
            } else if (PyList_Check(callbacks)) {
                failed = PyList_Append(callbacks, fn) < 0;
            } else {
                PyErr_SetString(PyExc_TypeError, "a record future's _done_callbacks must be a list");
                failed = 1;
            }
            if (lock_call(shared_lock, str_release) < 0 || failed) {
                return NULL;
            }
            Py_RETURN_NONE;
        }
        if (lock_call(shared_lock, str_release) < 0) {
            return NULL;
        }
    }
    PyObject *call[2] = {self, fn};
    return PyObject_Vectorcall(add_in_python, call, 2, NULL);
}

static PyMethodDef add_method = {
    "add_done_callback", (PyCFunction)(void (*)(void))future_add_done_callback, METH_O,
    "Call fn(future) once settled or cancelled (at once if it is), as Future.add_done_callback (compiled for a "
    "pending future without a condition; see mqwire.common.blocking_future)."};

/* RecordFuture._release_callbacks for each of ``told`` (futures whose callbacks the short way ran) under one
 * acquisition of the shared lock: their callbacks dropped and, unless a condition or an error came meanwhile,
 * each out of the collector's scans again. */
static PyObject *release_callbacks(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "release_callbacks(told, lock)");
        return NULL;
    }
    PyObject *told = args[0], *lock = args[1];
    if (future_class == NULL || check_futures(told) < 0) {
        if (future_class == NULL) {
            PyErr_SetString(PyExc_RuntimeError, "install() has not run");
        }
        return NULL;
    }
    if (lock_call(lock, str_acquire) < 0) {
        return NULL;
    }
    for (Py_ssize_t at = 0; at < PyList_GET_SIZE(told); at++) {
        PyObject *future = PyList_GET_ITEM(told, at);
        if (SLOT(future, at_made_condition) != Py_None) {
            continue;
        }
        set_slot(future, at_done_callbacks, no_callbacks);
        if (SLOT(future, at_exception) == Py_None && PyObject_GC_IsTracked(future)) {
            PyObject_GC_UnTrack(future);
        }
    }
    if (lock_call(lock, str_release) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* install(RecordFuture, pending, running, finished, no_callbacks, lock): learn where the class keeps its slots
 * and the values its steps use, and give it its compiled result() and add_done_callback(), the Python ones kept
 * for every other case. */
static PyObject *install(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 6 || !PyType_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "install(RecordFuture, pending, running, finished, no_callbacks, lock)");
        return NULL;
    }
    if (future_class != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "RecordFuture is compiled already");
        return NULL;
    }
    PyObject *cls = args[0];
    Py_ssize_t *offsets[] = {&at_state, &at_result, &at_exception, &at_made_condition,
                             &at_done_callbacks, &at_lazy, &at_place};
    const char *names[] = {"_state", "_result", "_exception", "_made_condition", "_done_callbacks", "_lazy", "_place"};
    for (size_t at = 0; at < sizeof(names) / sizeof(names[0]); at++) {
        *offsets[at] = slot_offset(cls, names[at]);
        if (*offsets[at] < 0) {
            return NULL;
        }
    }
    PyObject *written = PyObject_GetAttrString(cls, "result");
    PyObject *adding = written == NULL ? NULL : PyObject_GetAttrString(cls, "add_done_callback");
    if (adding == NULL) {
        Py_XDECREF(written);
        return NULL;
    }
    PyObject *compiled = PyDescr_NewMethod((PyTypeObject *)cls, &result_method);
    PyObject *compiled_add = compiled == NULL ? NULL : PyDescr_NewMethod((PyTypeObject *)cls, &add_method);
    if (compiled_add == NULL || PyObject_SetAttrString(cls, "result", compiled) < 0 ||
        PyObject_SetAttrString(cls, "add_done_callback", compiled_add) < 0) {
        Py_XDECREF(compiled);
        Py_XDECREF(compiled_add);
        Py_DECREF(written);
        Py_DECREF(adding);
        return NULL;
    }
    Py_DECREF(compiled);
    Py_DECREF(compiled_add);
    result_in_python = written;
    add_in_python = adding;
    shared_lock = Py_NewRef(args[5]);
    future_class = (PyTypeObject *)Py_NewRef(cls);
    state_pending = Py_NewRef(args[1]);
    state_running = Py_NewRef(args[2]);
    state_finished = Py_NewRef(args[3]);
    no_callbacks = Py_NewRef(args[4]);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"install", (PyCFunction)(void (*)(void))install, METH_FASTCALL,
     "install(RecordFuture, pending, running, finished, no_callbacks): learn the class's slots and compile its "
     "result()."},
    {"start_many", (PyCFunction)(void (*)(void))start_many, METH_FASTCALL,
     "start_many(futures, lock) -> (started, slow): RecordFuture.start_many's walk, under the lock."},
    {"release_callbacks", (PyCFunction)(void (*)(void))release_callbacks, METH_FASTCALL,
     "release_callbacks(told, lock): RecordFuture._release_callbacks for each, under one acquisition of the lock."},
    {"finish_many_lazily", (PyCFunction)(void (*)(void))finish_many_lazily, METH_FASTCALL,
     "finish_many_lazily(futures, lazy, first, lock) -> (told, slow): RecordFuture.finish_many_lazily's walk, "
     "under the lock."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_enqueue_speedups", NULL, 0, module_methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__enqueue_speedups(void) {
    if (PyType_Ready(&ValuePutType) < 0 || PyType_Ready(&BytesEnqueueType) < 0) {
        return NULL;
    }
    str_closed = PyUnicode_InternFromString("_closed");
    str_scheduled = PyUnicode_InternFromString("_scheduled");
    str_generation = PyUnicode_InternFromString("_generation");
    zero = PyLong_FromLong(0);
    str_acquire = PyUnicode_InternFromString("acquire");
    str_release = PyUnicode_InternFromString("release");
    str_callbacks_seen = PyUnicode_InternFromString("_callbacks_seen");
    if (str_closed == NULL || str_scheduled == NULL || str_generation == NULL || zero == NULL || str_acquire == NULL ||
        str_release == NULL || str_callbacks_seen == NULL) {
        return NULL;
    }
    PyObject *created = PyModule_Create(&module);
    if (created == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(created, "ValuePut", (PyObject *)&ValuePutType) < 0 ||
        PyModule_AddObjectRef(created, "BytesEnqueue", (PyObject *)&BytesEnqueueType) < 0) {
        Py_DECREF(created);
        return NULL;
    }
    return created;
}
