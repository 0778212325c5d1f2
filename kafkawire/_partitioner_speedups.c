/* Kafka's murmur2 key hash, compiled: run once per keyed record by the producer.
 *
 * partitioner.py has the same function in Python (the reference, used without the extension); the tests run
 * both on the same keys. Kafka's variant: seed 0x9747b28c, little-endian 4-byte words, the tail's bytes
 * mixed in from the highest, the result as Java's signed int.
 *
 *   murmur2(data) -> int                         the hash of a bytes-like object
 *   partition_for_key(key, partitions) -> int     (murmur2(key) & 0x7fffffff) % partitions
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static int32_t hash_bytes(const unsigned char *data, Py_ssize_t length) {
    const uint32_t m = 0x5bd1e995;
    uint32_t h = 0x9747b28cu ^ (uint32_t)length;
    Py_ssize_t words = length / 4;
    for (Py_ssize_t i = 0; i < words; i++) {
        const unsigned char *p = data + 4 * i;
        uint32_t k = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
        k *= m;
        k ^= k >> 24;
        k *= m;
        h = (h * m) ^ k;
    }
    const unsigned char *tail = data + 4 * words;
    switch (length & 3) {
        case 3: h ^= (uint32_t)tail[2] << 16; /* fall through */
        case 2: h ^= (uint32_t)tail[1] << 8;  /* fall through */
        case 1:
            h ^= tail[0];
            h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return (int32_t)h;
}

/* 0 and the hash in *out, or -1 with TypeError set for what is not bytes-like. */
static int hash_object(PyObject *obj, int32_t *out) {
    if (PyBytes_CheckExact(obj)) {
        *out = hash_bytes((const unsigned char *)PyBytes_AS_STRING(obj), PyBytes_GET_SIZE(obj));
        return 0;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0) return -1;
    *out = hash_bytes((const unsigned char *)view.buf, view.len);
    PyBuffer_Release(&view);
    return 0;
}

static PyObject *murmur2(PyObject *module, PyObject *data) {
    (void)module;
    int32_t h;
    if (hash_object(data, &h) < 0) return NULL;
    return PyLong_FromLong(h);
}

static PyObject *partition_for_key(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "partition_for_key takes (key, partitions)");
        return NULL;
    }
    int32_t h;
    if (hash_object(args[0], &h) < 0) return NULL;
    long positive = (long)((uint32_t)h & 0x7fffffffu);
    Py_ssize_t partitions = PyLong_CheckExact(args[1]) ? PyLong_AsSsize_t(args[1]) : -1;
    if (partitions <= 0) {
        /* Anything but a positive int: Python's own % decides (and raises) as the Python partitioner does. */
        PyErr_Clear();
        PyObject *hashed = PyLong_FromLong(positive);
        if (hashed == NULL) return NULL;
        PyObject *result = PyNumber_Remainder(hashed, args[1]);
        Py_DECREF(hashed);
        return result;
    }
    return PyLong_FromSsize_t((Py_ssize_t)positive % partitions);
}

static PyMethodDef methods[] = {
    {"murmur2", murmur2, METH_O, "The 32-bit murmur2 hash Kafka uses, as the signed int Java returns."},
    {"partition_for_key", (PyCFunction)(void (*)(void))partition_for_key, METH_FASTCALL,
     "The partition of a keyed record among `partitions` partitions (Java's default partitioner)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_partitioner_speedups", NULL, 0, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__partitioner_speedups(void) { return PyModule_Create(&module); }
