/* The per-message loops of Pulsar batch payloads, compiled.
 *
 * batch.py has the reference implementation in Python and uses these when the extension is built:
 *
 *   encode_entry(payload, properties, partition_key, key_b64, ordering_key, event_time, sequence_id, null_value)
 *       -> bytes: [uint32 size][SingleMessageMetadata][payload], the fields written as batch.py writes them;
 *   decode_entries(batch_payload, count) -> list[BatchEntry] | None
 *       None means "not the common layout": the caller decodes with the Python reference, which either
 *       reads it or raises the ProtocolError. Only what is certainly read the same way is read here.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static PyTypeObject *BatchEntryType = NULL;

static inline Py_ssize_t varint_size(uint64_t v) {
    Py_ssize_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static inline char *put_varint(char *out, uint64_t v) {
    while (v >= 0x80) {
        *out++ = (char)((v & 0x7f) | 0x80);
        v >>= 7;
    }
    *out++ = (char)v;
    return out;
}

/* Optional bytes argument: None or a bytes object (borrowed buffer). */
static int optional_bytes(PyObject *obj, const char **data, Py_ssize_t *size, const char *what) {
    if (obj == Py_None) {
        *data = NULL;
        *size = -1;
        return 0;
    }
    if (!PyBytes_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be bytes or None", what);
        return -1;
    }
    *data = PyBytes_AS_STRING(obj);
    *size = PyBytes_GET_SIZE(obj);
    return 0;
}

static PyObject *encode_entry(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "encode_entry takes 8 arguments");
        return NULL;
    }
    const char *payload, *properties, *partition_key, *ordering_key;
    Py_ssize_t payload_size, properties_size, key_size, ordering_size;
    if (optional_bytes(args[0], &payload, &payload_size, "payload") < 0) return NULL;
    if (optional_bytes(args[1], &properties, &properties_size, "properties") < 0) return NULL;
    if (optional_bytes(args[2], &partition_key, &key_size, "partition_key") < 0) return NULL;
    if (optional_bytes(args[4], &ordering_key, &ordering_size, "ordering_key") < 0) return NULL;
    if (payload == NULL || properties == NULL) {
        PyErr_SetString(PyExc_TypeError, "payload and properties must be bytes");
        return NULL;
    }
    int key_b64 = PyObject_IsTrue(args[3]);
    int null_value = PyObject_IsTrue(args[7]);
    if (key_b64 < 0 || null_value < 0) return NULL;
    unsigned long long event_time = PyLong_AsUnsignedLongLong(args[5]);
    if (event_time == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    int has_sequence = args[6] != Py_None;
    unsigned long long sequence_id = 0;
    if (has_sequence) {
        sequence_id = PyLong_AsUnsignedLongLong(args[6]);
        if (sequence_id == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    }

    Py_ssize_t metadata = properties_size + 1 + varint_size((uint64_t)payload_size);
    if (partition_key != NULL) metadata += 1 + varint_size((uint64_t)key_size) + key_size;
    if (event_time) metadata += 1 + varint_size(event_time);
    if (key_b64) metadata += 2;
    if (ordering_key != NULL) metadata += 1 + varint_size((uint64_t)ordering_size) + ordering_size;
    if (has_sequence) metadata += 1 + varint_size(sequence_id);
    if (null_value) metadata += 2;
    if (metadata > UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "message metadata too large");
        return NULL;
    }

    PyObject *entry = PyBytes_FromStringAndSize(NULL, 4 + metadata + payload_size);
    if (entry == NULL) return NULL;
    char *out = PyBytes_AS_STRING(entry);
    out[0] = (char)(metadata >> 24);
    out[1] = (char)(metadata >> 16);
    out[2] = (char)(metadata >> 8);
    out[3] = (char)metadata;
    out += 4;
    memcpy(out, properties, (size_t)properties_size);
    out += properties_size;
    if (partition_key != NULL) {
        *out++ = 0x12;
        out = put_varint(out, (uint64_t)key_size);
        memcpy(out, partition_key, (size_t)key_size);
        out += key_size;
    }
    *out++ = 0x18;
    out = put_varint(out, (uint64_t)payload_size);
    if (event_time) {
        *out++ = 0x28;
        out = put_varint(out, event_time);
    }
    if (key_b64) {
        *out++ = 0x30;
        *out++ = 1;
    }
    if (ordering_key != NULL) {
        *out++ = 0x3A;
        out = put_varint(out, (uint64_t)ordering_size);
        memcpy(out, ordering_key, (size_t)ordering_size);
        out += ordering_size;
    }
    if (has_sequence) {
        *out++ = 0x40;
        out = put_varint(out, sequence_id);
    }
    if (null_value) {
        *out++ = 0x48;
        *out++ = 1;
    }
    memcpy(out, payload, (size_t)payload_size);
    return entry;
}

/* ------------------------------------------------------------------------------------------ decoding */

/* A varint of at most 9 bytes (63 bits) inside [*pos, stop); 0 when it is not that simple. */
static inline int simple_varint(const unsigned char *data, Py_ssize_t *pos, Py_ssize_t stop, uint64_t *out) {
    uint64_t value = 0;
    for (int shift = 0; shift < 63; shift += 7) {
        if (*pos >= stop) return 0;
        unsigned char byte = data[(*pos)++];
        value |= (uint64_t)(byte & 0x7f) << shift;
        if (byte < 0x80) {
            *out = value;
            return 1;
        }
    }
    return 0;
}

/* A KeyValue {1: key, 2: value} in [pos, stop) into ``properties``; 0 when not the plain layout. */
static int read_property(const unsigned char *data, Py_ssize_t pos, Py_ssize_t stop, PyObject *properties) {
    const unsigned char *key = NULL, *value = NULL;
    Py_ssize_t key_size = 0, value_size = 0;
    int seen_key = 0, seen_value = 0;
    while (pos < stop) {
        unsigned char field_tag = data[pos++];
        uint64_t length;
        if ((field_tag != 0x0A && field_tag != 0x12) || !simple_varint(data, &pos, stop, &length)) return 0;
        if (length > (uint64_t)(stop - pos)) return 0;
        if (field_tag == 0x0A) {
            key = data + pos, key_size = (Py_ssize_t)length, seen_key = 1;
        } else {
            value = data + pos, value_size = (Py_ssize_t)length, seen_value = 1;
        }
        pos += (Py_ssize_t)length;
    }
    if (!seen_key || !seen_value) return 0;
    PyObject *name = PyUnicode_DecodeUTF8((const char *)key, key_size, NULL);
    if (name == NULL) return 0;
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)value, value_size);
    if (bytes == NULL) {
        Py_DECREF(name);
        return 0;
    }
    int failed = PyDict_SetItem(properties, name, bytes);
    Py_DECREF(name);
    Py_DECREF(bytes);
    return failed == 0;
}

/* One [uint32 size][SingleMessageMetadata][payload] at *pos; NULL (no exception) when not simple. */
static PyObject *read_entry(const unsigned char *data, Py_ssize_t *pos, Py_ssize_t end) {
    if (end - *pos < 4) return NULL;
    uint32_t size = ((uint32_t)data[*pos] << 24) | ((uint32_t)data[*pos + 1] << 16) |
                    ((uint32_t)data[*pos + 2] << 8) | data[*pos + 3];
    Py_ssize_t p = *pos + 4;
    /* Compared unsigned: where Py_ssize_t is 32 bits, a size above 2**31 would turn negative as one. */
    if ((uint64_t)size > (uint64_t)(end - p)) return NULL;
    Py_ssize_t stop = p + (Py_ssize_t)size;

    PyObject *properties = PyDict_New();
    PyObject *partition_key = NULL, *ordering_key = NULL;
    uint64_t event_time = 0, sequence_id = 0;
    int has_sequence = 0, b64 = 0, null_value = 0, compacted = 0;
    int64_t payload_size = -1;
    if (properties == NULL) return NULL;
    while (p < stop) {
        unsigned char field_tag = data[p++];
        uint64_t value;
        if (!simple_varint(data, &p, stop, &value)) goto unusual;
        switch (field_tag) {
            case 0x18:
                if (value >= (1u << 31)) goto unusual;
                payload_size = (int64_t)value;
                break;
            case 0x20: compacted = value != 0; break;
            case 0x28: event_time = value; break;
            case 0x30: b64 = value != 0; break;
            case 0x40: sequence_id = value, has_sequence = 1; break;
            case 0x48: null_value = value != 0; break;
            case 0x50: break; /* null_partition_key: not kept */
            case 0x0A:
            case 0x12:
            case 0x3A:
                if (value > (uint64_t)(stop - p)) goto unusual;
                if (field_tag == 0x0A) {
                    if (!read_property(data, p, p + (Py_ssize_t)value, properties)) goto unusual;
                } else if (field_tag == 0x12) {
                    Py_XDECREF(partition_key);
                    partition_key = PyUnicode_DecodeUTF8((const char *)data + p, (Py_ssize_t)value, NULL);
                    if (partition_key == NULL) goto unusual;
                } else {
                    Py_XDECREF(ordering_key);
                    ordering_key = PyBytes_FromStringAndSize((const char *)data + p, (Py_ssize_t)value);
                    if (ordering_key == NULL) goto unusual;
                }
                p += (Py_ssize_t)value;
                break;
            default:
                goto unusual;
        }
    }
    if (payload_size < 0 || payload_size > end - stop) goto unusual;

    PyObject *entry = PyStructSequence_New(BatchEntryType);
    if (entry == NULL) goto unusual;
    PyObject *payload = PyBytes_FromStringAndSize((const char *)data + stop, (Py_ssize_t)payload_size);
    PyObject *event = PyLong_FromUnsignedLongLong(event_time);
    PyObject *sequence = has_sequence ? PyLong_FromUnsignedLongLong(sequence_id) : Py_NewRef(Py_None);
    if (payload == NULL || event == NULL || sequence == NULL) {
        Py_XDECREF(payload);
        Py_XDECREF(event);
        Py_XDECREF(sequence);
        Py_DECREF(entry);
        goto unusual;
    }
    PyStructSequence_SET_ITEM(entry, 0, payload);
    PyStructSequence_SET_ITEM(entry, 1, properties);
    PyStructSequence_SET_ITEM(entry, 2, partition_key != NULL ? partition_key : Py_NewRef(Py_None));
    PyStructSequence_SET_ITEM(entry, 3, PyBool_FromLong(b64));
    PyStructSequence_SET_ITEM(entry, 4, ordering_key != NULL ? ordering_key : Py_NewRef(Py_None));
    PyStructSequence_SET_ITEM(entry, 5, event);
    PyStructSequence_SET_ITEM(entry, 6, sequence);
    PyStructSequence_SET_ITEM(entry, 7, PyBool_FromLong(null_value));
    PyStructSequence_SET_ITEM(entry, 8, PyBool_FromLong(compacted));
    *pos = stop + (Py_ssize_t)payload_size;
    return entry;

unusual:
    PyErr_Clear();
    Py_DECREF(properties);
    Py_XDECREF(partition_key);
    Py_XDECREF(ordering_key);
    return NULL;
}

static PyObject *decode_entries(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2 || !PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "decode_entries(batch_payload: bytes, count: int)");
        return NULL;
    }
    Py_ssize_t count = PyLong_AsSsize_t(args[1]);
    if (count == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t end = PyBytes_GET_SIZE(args[0]);
    /* Every entry takes at least 6 bytes (size and payload_size): a larger count cannot be right. */
    if (count < 0 || count > end / 6) Py_RETURN_NONE;
    PyObject *entries = PyList_New(count);
    if (entries == NULL) return NULL;
    Py_ssize_t pos = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *entry = read_entry(data, &pos, end);
        if (entry == NULL) {
            Py_DECREF(entries);
            Py_RETURN_NONE;
        }
        PyList_SET_ITEM(entries, i, entry);
    }
    return entries;
}

static PyStructSequence_Field entry_fields[] = {
    {"payload", NULL},         {"properties", NULL}, {"partition_key", NULL},
    {"partition_key_b64_encoded", NULL}, {"ordering_key", NULL}, {"event_time", NULL},
    {"sequence_id", NULL},     {"null_value", NULL}, {"compacted_out", NULL},
    {NULL, NULL},
};

static PyStructSequence_Desc entry_desc = {"pulsarwire.protocol._batch_speedups.BatchEntry",
                                           "One message unpacked from a batch payload.", entry_fields, 9};

static PyMethodDef methods[] = {
    {"encode_entry", (PyCFunction)(void (*)(void))encode_entry, METH_FASTCALL,
     "[uint32 size][SingleMessageMetadata][payload] of one batched message."},
    {"decode_entries", (PyCFunction)(void (*)(void))decode_entries, METH_FASTCALL,
     "The entries of a batch payload, or None when the Python reference must read it."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_batch_speedups", NULL, 0, methods,
                                        NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__batch_speedups(void) {
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) return NULL;
    BatchEntryType = PyStructSequence_NewType(&entry_desc);
    if (BatchEntryType == NULL || PyModule_AddObjectRef(module, "BatchEntry", (PyObject *)BatchEntryType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
