/* Taking one object out of the cycle collector's lists, and putting it back, compiled.
 *
 * A blocking producer hands its caller one concurrent.futures.Future per record, and the caller keeps them,
 * often hundreds of thousands, until it has flushed. Each one the collector tracks is scanned again at every
 * full collection, and while they pile up full collections come often (whenever the survivors have grown by a
 * quarter): 500,000 kept futures cost about 1.2 microseconds a record, more than the rest of the hand-over.
 * Python has no way to leave an object of a class written in Python out of those scans: this module does it
 * for the objects whose owner knows no reference cycle can pass through them, and tracks them again the moment
 * one could (see mqwire.common.blocking_future).
 *
 * Without this extension (or with MQWIRE_PURE_PYTHON set) both functions are no-ops written in Python.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *untrack(PyObject *module, PyObject *target) {
    (void)module;
    /* PyObject_GC_UnTrack is a no-op on an object already untracked; an object of a type without the
     * collector was never tracked. */
    if (PyObject_IS_GC(target)) {
        PyObject_GC_UnTrack(target);
    }
    Py_RETURN_NONE;
}

static PyObject *track(PyObject *module, PyObject *target) {
    (void)module;
    /* PyObject_GC_Track aborts the process on an object tracked already: so only an untracked one. */
    if (PyObject_IS_GC(target) && !PyObject_GC_IsTracked(target)) {
        PyObject_GC_Track(target);
    }
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"untrack", untrack, METH_O,
     "Leave the object out of the cycle collector's scans (its owner must make sure no cycle passes through it)."},
    {"track", track, METH_O, "Let the cycle collector scan the object again (nothing when it does already)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_gc_speedups", NULL, 0, module_methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__gc_speedups(void) { return PyModule_Create(&module); }
