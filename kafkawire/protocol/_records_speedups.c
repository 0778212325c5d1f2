/* The per-record inner loops of Kafka record batches v2, compiled.
 *
 * records.py has the same three functions in Python and uses these when the extension is built. Both
 * implementations are tested against each other; the Python one is the reference. Nothing here knows
 * about batches, compression or CRCs: only the varint-framed records between a batch header and its end.
 *
 *   append_record(buffer, limit, offset_delta, timestamp_delta, key, value, headers) -> bool
 *   append_records(buffer, limit, first_delta, timestamp_delta, keys, values, headers, start, stop) -> int
 *   decode_records(data, count, base_offset, base_timestamp, fixed_timestamp, make_record, prefix, suffix) -> list
 *       each record is make_record(*prefix, offset, key, value, headers, timestamp, *suffix), headers a tuple
 *       of (name, value) pairs; the records are left untracked by the cycle collector
 *   RecordAppender(buffer, max_size).add(timestamp, key, value, headers) -> size or -1
 *       append_record with the batch's record count and timestamps kept here (BatchBuilder's per-record step)
 *   RecordAppender.add_now(value, timestamps) -> size or -1
 *       add() of a value alone, stamped with the wall clock's milliseconds, the stamp kept in `timestamps`
 *   RecordTimestamps(): the producer's per-record timestamps as a packed array (append, extend, len, [i])
 */
#include <time.h>
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#define MAX_VARINT_BYTES 10

/* Kafka's varints are zig-zag encoded so that small negative numbers stay short. All in unsigned arithmetic:
 * a right shift of a negative signed value is implementation-defined in C. */
static inline uint64_t zigzag(int64_t n) { return ((uint64_t)n << 1) ^ ((uint64_t)0 - ((uint64_t)n >> 63)); }

/* An offset delta is an int32 on the wire; a timestamp delta an int64 (a long long here). */
static int check_offset_delta(long long delta) {
    if (delta < INT32_MIN || delta > INT32_MAX) {
        PyErr_Format(PyExc_OverflowError, "record offset delta %lld does not fit in 32 bits", delta);
        return -1;
    }
    return 0;
}

/* *total += more, or -1 with OverflowError set when the sum would pass Py_ssize_t. */
static inline int add_size(Py_ssize_t *total, Py_ssize_t more) {
    if (__builtin_add_overflow(*total, more, total)) {
        PyErr_SetString(PyExc_OverflowError, "record too large");
        return -1;
    }
    return 0;
}

static inline Py_ssize_t varint_size(uint64_t v) {
    Py_ssize_t size = 1;
    while (v >= 0x80) {
        v >>= 7;
        size++;
    }
    return size;
}

static inline char *put_varint(char *out, uint64_t v) {
    while (v >= 0x80) {
        *out++ = (char)((v & 0x7f) | 0x80);
        v >>= 7;
    }
    *out++ = (char)v;
    return out;
}

/* A key, value or header value: bytes-like or None (written as length -1). */
typedef struct {
    Py_buffer view;
    int present;
} Field;

static int field_open(PyObject *obj, Field *field, const char *what) {
    field->present = 0;
    if (obj == Py_None) return 0;
    if (PyObject_GetBuffer(obj, &field->view, PyBUF_SIMPLE) < 0) {
        PyErr_Format(PyExc_TypeError, "record %s must be bytes or None, not %.100s", what, Py_TYPE(obj)->tp_name);
        return -1;
    }
    field->present = 1;
    return 0;
}

static void field_close(Field *field) {
    if (field->present) PyBuffer_Release(&field->view);
    field->present = 0;
}

/* *total += the field's size, or -1 with OverflowError set (a buffer's length is the exporter's word). */
static inline int add_field_size(Py_ssize_t *total, const Field *field) {
    if (!field->present) return add_size(total, 1);
    if (add_size(total, varint_size(zigzag(field->view.len))) < 0) return -1;
    return add_size(total, field->view.len);
}

static inline char *field_put(char *out, const Field *field) {
    if (!field->present) return put_varint(out, zigzag(-1));
    out = put_varint(out, zigzag(field->view.len));
    memcpy(out, field->view.buf, (size_t)field->view.len);
    return out + field->view.len;
}

/* The buffer resized to `size`, with room reserved by doubling (up to `limit`, when there is one).
 * bytearray itself reserves only an eighth more, so a batch filled with 10 KB records was reallocated,
 * and often copied whole, at almost every record. */
static int grow(PyObject *buffer, Py_ssize_t size, Py_ssize_t limit) {
    PyByteArrayObject *bytes = (PyByteArrayObject *)buffer;
    Py_ssize_t reserved = bytes->ob_alloc;
    if (size < reserved) {
        /* Within the allocation the size is set in place: PyByteArray_Resize gives back more than half of it
         * when the size is below half, which a reclaimed batch buffer's first records are (see reclaim). */
        if (size >= Py_SIZE(bytes) && bytes->ob_exports == 0 && bytes->ob_start == bytes->ob_bytes) {
            Py_SET_SIZE(bytes, size);
            bytes->ob_start[size] = '\0';
            return 0;
        }
        return PyByteArray_Resize(buffer, size);
    }
    Py_ssize_t current = PyByteArray_GET_SIZE(buffer);
    Py_ssize_t doubled = current > PY_SSIZE_T_MAX / 2 ? PY_SSIZE_T_MAX : 2 * current;
    if (limit >= 0 && doubled > limit) doubled = limit;
    /* Resized to the reserve first, then down to `size`: bytearray keeps its allocation when it shrinks by
     * less than half. */
    if (doubled > size && PyByteArray_Resize(buffer, doubled) < 0) return -1;
    return PyByteArray_Resize(buffer, size);
}

/* One record onto the buffer: 1 appended, 0 refused (past the limit), -1 an error is set. */
static int append_one(PyObject *buffer, Py_ssize_t limit, long long offset_delta, long long timestamp_delta,
                      PyObject *key_obj, PyObject *value_obj, PyObject *headers_obj) {
    int result = -1;
    PyObject *headers = NULL;
    Field key, value;
    key.present = value.present = 0;
    Field *header_values = NULL;
    const char **header_names = NULL;
    Py_ssize_t *header_name_sizes = NULL;
    Py_ssize_t header_count = 0;

    if (field_open(key_obj, &key, "key") < 0) goto done;
    if (field_open(value_obj, &value, "value") < 0) goto done;
    headers = PySequence_Fast(headers_obj, "record headers must be a sequence of (str, bytes | None) pairs");
    if (headers == NULL) goto done;
    header_count = PySequence_Fast_GET_SIZE(headers);

    Py_ssize_t body = 1 /* attributes */ + varint_size(zigzag(timestamp_delta)) + varint_size(zigzag(offset_delta));
    if (add_field_size(&body, &key) < 0 || add_field_size(&body, &value) < 0 ||
        add_size(&body, varint_size(zigzag(header_count))) < 0) {
        goto done;
    }
    if (header_count > 0) {
        header_values = PyMem_Calloc((size_t)header_count, sizeof(Field));
        header_names = PyMem_Calloc((size_t)header_count, sizeof(char *));
        header_name_sizes = PyMem_Calloc((size_t)header_count, sizeof(Py_ssize_t));
        if (header_values == NULL || header_names == NULL || header_name_sizes == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        PyObject **items = PySequence_Fast_ITEMS(headers);
        for (Py_ssize_t i = 0; i < header_count; i++) {
            PyObject *pair = items[i];
            if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(pair, 0))) {
                PyErr_SetString(PyExc_TypeError, "each record header must be a (str, bytes | None) pair");
                goto done;
            }
            header_names[i] = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(pair, 0), &header_name_sizes[i]);
            if (header_names[i] == NULL) goto done;
            if (field_open(PyTuple_GET_ITEM(pair, 1), &header_values[i], "header value") < 0) goto done;
            if (add_size(&body, varint_size(zigzag(header_name_sizes[i]))) < 0 ||
                add_size(&body, header_name_sizes[i]) < 0 || add_field_size(&body, &header_values[i]) < 0) {
                goto done;
            }
        }
    }

    Py_ssize_t start = PyByteArray_GET_SIZE(buffer);
    Py_ssize_t total = varint_size(zigzag(body));
    if (add_size(&total, body) < 0) goto done;
    if (limit >= 0 && total > limit - start) {
        result = 0;
        goto done;
    }
    Py_ssize_t end = start;
    if (add_size(&end, total) < 0 || grow(buffer, end, limit) < 0) goto done;
    char *out = PyByteArray_AS_STRING(buffer) + start;
    out = put_varint(out, zigzag(body));
    *out++ = 0; /* record attributes: unused */
    out = put_varint(out, zigzag(timestamp_delta));
    out = put_varint(out, zigzag(offset_delta));
    out = field_put(out, &key);
    out = field_put(out, &value);
    out = put_varint(out, zigzag(header_count));
    for (Py_ssize_t i = 0; i < header_count; i++) {
        out = put_varint(out, zigzag(header_name_sizes[i]));
        memcpy(out, header_names[i], (size_t)header_name_sizes[i]);
        out += header_name_sizes[i];
        out = field_put(out, &header_values[i]);
    }
    result = 1;

done:
    field_close(&key);
    field_close(&value);
    if (header_values != NULL) {
        for (Py_ssize_t i = 0; i < header_count; i++) field_close(&header_values[i]);
    }
    PyMem_Free(header_values);
    PyMem_Free(header_names);
    PyMem_Free(header_name_sizes);
    Py_XDECREF(headers);
    return result;
}

static PyObject *append_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "append_record takes 7 arguments");
        return NULL;
    }
    PyObject *buffer = args[0];
    if (!PyByteArray_CheckExact(buffer)) {
        PyErr_SetString(PyExc_TypeError, "append_record: buffer must be a bytearray");
        return NULL;
    }
    Py_ssize_t limit = PyLong_AsSsize_t(args[1]);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    long long offset_delta = PyLong_AsLongLong(args[2]);
    if (offset_delta == -1 && PyErr_Occurred()) return NULL;
    if (check_offset_delta(offset_delta) < 0) return NULL;
    long long timestamp_delta = PyLong_AsLongLong(args[3]);
    if (timestamp_delta == -1 && PyErr_Occurred()) return NULL;
    int appended = append_one(buffer, limit, offset_delta, timestamp_delta, args[4], args[5], args[6]);
    if (appended < 0) return NULL;
    return Py_NewRef(appended ? Py_True : Py_False);
}

/* Records start..stop of the lists keys (or None: no keys), values and headers (or None: none), with
 * offset deltas from first_delta and one timestamp delta, appended until one does not fit under limit
 * (the first always goes in when limit is -1). Returns how many were appended. */
static PyObject *append_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "append_records takes 9 arguments");
        return NULL;
    }
    PyObject *buffer = args[0];
    if (!PyByteArray_CheckExact(buffer)) {
        PyErr_SetString(PyExc_TypeError, "append_records: buffer must be a bytearray");
        return NULL;
    }
    PyObject *keys = args[4], *values = args[5], *headers = args[6];
    if ((keys != Py_None && !PyList_CheckExact(keys)) || !PyList_CheckExact(values) ||
        (headers != Py_None && !PyList_CheckExact(headers))) {
        PyErr_SetString(PyExc_TypeError, "append_records: keys and headers must be lists or None, values a list");
        return NULL;
    }
    Py_ssize_t limit = PyLong_AsSsize_t(args[1]);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    long long first_delta = PyLong_AsLongLong(args[2]);
    if (first_delta == -1 && PyErr_Occurred()) return NULL;
    long long timestamp_delta = PyLong_AsLongLong(args[3]);
    if (timestamp_delta == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t start = PyLong_AsSsize_t(args[7]);
    if (start == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t stop = PyLong_AsSsize_t(args[8]);
    if (stop == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t size = PyList_GET_SIZE(values);
    if (start < 0 || stop > size || start > stop || (keys != Py_None && PyList_GET_SIZE(keys) != size) ||
        (headers != Py_None && PyList_GET_SIZE(headers) != size)) {
        PyErr_SetString(PyExc_ValueError, "append_records: keys, values and headers differ in length or bad range");
        return NULL;
    }
    /* Every delta from first_delta to the last one must be an int32: checked before anything is appended.
     * first_delta is an int32 here and stop - start at most a list's length, so the sum cannot overflow. */
    if (check_offset_delta(first_delta) < 0 ||
        (stop > start && check_offset_delta(first_delta + (long long)(stop - start - 1)) < 0)) {
        return NULL;
    }
    PyObject *no_headers = PyTuple_New(0);
    if (no_headers == NULL) return NULL;
    Py_ssize_t i = start;
    for (; i < stop; i++) {
        if (PyList_GET_SIZE(values) != size || (keys != Py_None && PyList_GET_SIZE(keys) != size) ||
            (headers != Py_None && PyList_GET_SIZE(headers) != size)) {
            PyErr_SetString(PyExc_RuntimeError, "append_records: a list changed size");
            Py_DECREF(no_headers);
            return NULL;
        }
        /* Held while in use: a buffer exporter's code could change the lists. */
        PyObject *key = Py_NewRef(keys == Py_None ? Py_None : PyList_GET_ITEM(keys, i));
        PyObject *hdrs = Py_NewRef(headers == Py_None ? no_headers : PyList_GET_ITEM(headers, i));
        PyObject *value = Py_NewRef(PyList_GET_ITEM(values, i));
        int appended = append_one(buffer, limit, first_delta + (i - start), timestamp_delta, key, value, hdrs);
        Py_DECREF(key);
        Py_DECREF(hdrs);
        Py_DECREF(value);
        if (appended < 0) {
            Py_DECREF(no_headers);
            return NULL;
        }
        if (appended == 0) break;
    }
    Py_DECREF(no_headers);
    return PyLong_FromSsize_t(i - start);
}

/* ------------------------------------------------------------------------------------------ decoding */

typedef struct {
    const unsigned char *data;
    Py_ssize_t pos;
    Py_ssize_t end;
} Reader;

/* A zig-zag varint of at most ``max_bytes`` bytes; -1 with ValueError set when malformed or cut short. */
static int read_varint(Reader *r, Py_ssize_t limit, int max_bytes, int64_t *out, const char *what) {
    uint64_t raw = 0;
    int shift = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (r->pos >= limit) {
            PyErr_Format(PyExc_ValueError, "%s: varint cut short", what);
            return -1;
        }
        unsigned char byte = r->data[r->pos++];
        /* The tenth byte holds bit 63 alone: anything more would pass 64 bits. */
        if (i == 9 && byte > 1) {
            PyErr_Format(PyExc_ValueError, "%s: varint exceeds 64 bits", what);
            return -1;
        }
        raw |= (uint64_t)(byte & 0x7f) << shift;
        if (byte < 0x80) {
            int64_t value = (int64_t)((raw >> 1) ^ ((uint64_t)0 - (raw & 1)));
            if (max_bytes == 5 && (value > INT32_MAX || value < INT32_MIN)) {
                PyErr_Format(PyExc_ValueError, "%s: varint out of int32 range", what);
                return -1;
            }
            *out = value;
            return 0;
        }
        shift += 7;
    }
    PyErr_Format(PyExc_ValueError, "%s: varint longer than %d bytes", what, max_bytes);
    return -1;
}

/* Bytes of ``length`` from a varint prefix, or None for -1; a new reference or NULL. */
static PyObject *read_field(Reader *r, Py_ssize_t limit, const char *what) {
    int64_t length;
    if (read_varint(r, limit, 5, &length, what) < 0) return NULL;
    if (length < 0) {
        if (length != -1) {
            PyErr_Format(PyExc_ValueError, "%s has length %lld", what, (long long)length);
            return NULL;
        }
        Py_RETURN_NONE;
    }
    if (length > limit - r->pos) {
        PyErr_Format(PyExc_ValueError, "%s claims %lld bytes, %zd left", what, (long long)length, limit - r->pos);
        return NULL;
    }
    PyObject *field = PyBytes_FromStringAndSize((const char *)r->data + r->pos, (Py_ssize_t)length);
    r->pos += (Py_ssize_t)length;
    return field;
}

static PyObject *read_headers(Reader *r, Py_ssize_t limit) {
    int64_t count;
    if (read_varint(r, limit, 5, &count, "header count") < 0) return NULL;
    if (count < 0 || count * 2 > limit - r->pos) {
        PyErr_Format(PyExc_ValueError, "record claims %lld headers", (long long)count);
        return NULL;
    }
    PyObject *headers = PyTuple_New((Py_ssize_t)count);
    if (headers == NULL) return NULL;
    for (Py_ssize_t i = 0; i < (Py_ssize_t)count; i++) {
        int64_t name_length;
        if (read_varint(r, limit, 5, &name_length, "header key") < 0) goto fail;
        if (name_length < 0) {
            PyErr_SetString(PyExc_ValueError, "null record header key");
            goto fail;
        }
        if (name_length > limit - r->pos) {
            PyErr_Format(PyExc_ValueError, "header key claims %lld bytes, %zd left", (long long)name_length,
                         limit - r->pos);
            goto fail;
        }
        PyObject *name = PyUnicode_DecodeUTF8((const char *)r->data + r->pos, (Py_ssize_t)name_length, NULL);
        if (name == NULL) goto fail;
        r->pos += (Py_ssize_t)name_length;
        PyObject *value = read_field(r, limit, "header value");
        if (value == NULL) {
            Py_DECREF(name);
            goto fail;
        }
        PyObject *pair = PyTuple_Pack(2, name, value);
        Py_DECREF(name);
        Py_DECREF(value);
        if (pair == NULL) goto fail;
        PyTuple_SET_ITEM(headers, i, pair);
    }
    return headers;
fail:
    Py_DECREF(headers);
    return NULL;
}

#define MAX_EXTRA_ARGS 8

static PyObject *decode_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "decode_records takes 8 arguments");
        return NULL;
    }
    PyObject *make_record = args[5], *prefix = args[6], *suffix = args[7];
    if (!PyTuple_Check(prefix) || !PyTuple_Check(suffix) || PyTuple_GET_SIZE(prefix) > MAX_EXTRA_ARGS ||
        PyTuple_GET_SIZE(suffix) > MAX_EXTRA_ARGS) {
        PyErr_SetString(PyExc_TypeError, "decode_records: prefix and suffix must be short tuples");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *records = NULL;
    PyObject *fixed_timestamp = NULL; /* the broker's log-append time replaces every record's own */
    Py_ssize_t count = PyLong_AsSsize_t(args[1]);
    if (count == -1 && PyErr_Occurred()) goto done;
    long long base_offset = PyLong_AsLongLong(args[2]);
    if (base_offset == -1 && PyErr_Occurred()) goto done;
    long long base_timestamp = PyLong_AsLongLong(args[3]);
    if (base_timestamp == -1 && PyErr_Occurred()) goto done;
    if (args[4] != Py_None) {
        if (!PyLong_Check(args[4])) {
            PyErr_SetString(PyExc_TypeError, "decode_records: fixed timestamp must be an int or None");
            goto done;
        }
        fixed_timestamp = args[4];
    }
    /* The smallest record takes 7 bytes: never trust a count the data cannot hold. */
    if (count < 0 || count > view.len / 7 + 1) {
        PyErr_Format(PyExc_ValueError, "batch claims %zd records in %zd bytes", count, view.len);
        goto done;
    }
    Py_ssize_t n_prefix = PyTuple_GET_SIZE(prefix), n_suffix = PyTuple_GET_SIZE(suffix);
    PyObject *call_args[MAX_EXTRA_ARGS * 2 + 5];
    for (Py_ssize_t j = 0; j < n_prefix; j++) call_args[j] = PyTuple_GET_ITEM(prefix, j);
    for (Py_ssize_t j = 0; j < n_suffix; j++) call_args[n_prefix + 5 + j] = PyTuple_GET_ITEM(suffix, j);
    size_t n_call = (size_t)(n_prefix + 5 + n_suffix);

    records = PyList_New(count);
    if (records == NULL) goto done;
    Reader r = {(const unsigned char *)view.buf, 0, view.len};
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t length, timestamp_delta, offset_delta;
        if (read_varint(&r, r.end, 5, &length, "record length") < 0) goto fail;
        if (length < 6 || length > r.end - r.pos) {
            PyErr_Format(PyExc_ValueError, "record claims %lld bytes, %zd left", (long long)length, r.end - r.pos);
            goto fail;
        }
        Py_ssize_t record_end = r.pos + (Py_ssize_t)length;
        r.pos += 1; /* attributes: unused */
        if (read_varint(&r, record_end, 10, &timestamp_delta, "timestamp delta") < 0) goto fail;
        if (read_varint(&r, record_end, 5, &offset_delta, "offset delta") < 0) goto fail;
        PyObject *key = read_field(&r, record_end, "record key");
        if (key == NULL) goto fail;
        PyObject *value = read_field(&r, record_end, "record value");
        if (value == NULL) {
            Py_DECREF(key);
            goto fail;
        }
        PyObject *headers;
        if (r.pos < record_end && r.data[r.pos] == 0) {
            r.pos++;
            headers = PyTuple_New(0); /* the shared empty tuple: no allocation */
        } else {
            headers = read_headers(&r, record_end);
        }
        if (headers == NULL || r.pos != record_end) {
            if (headers != NULL) PyErr_Format(PyExc_ValueError, "record length %lld does not match its fields",
                                              (long long)length);
            Py_DECREF(key);
            Py_DECREF(value);
            Py_XDECREF(headers);
            goto fail;
        }
        /* Offsets and timestamps are int64s: a sum past that is malformed, as the Python decoder finds it. */
        long long offset_value, timestamp_value = 0;
        if (__builtin_add_overflow(base_offset, offset_delta, &offset_value) ||
            (fixed_timestamp == NULL && __builtin_add_overflow(base_timestamp, timestamp_delta, &timestamp_value))) {
            PyErr_Format(PyExc_ValueError, "record offset or timestamp passes 64 bits (deltas %lld and %lld)",
                         (long long)offset_delta, (long long)timestamp_delta);
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            goto fail;
        }
        PyObject *offset = PyLong_FromLongLong(offset_value);
        PyObject *timestamp = fixed_timestamp != NULL ? Py_NewRef(fixed_timestamp) : PyLong_FromLongLong(timestamp_value);
        PyObject *record = NULL;
        if (offset != NULL && timestamp != NULL) {
            /* make_record(*prefix, offset, key, value, headers, timestamp, *suffix) */
            call_args[n_prefix] = offset;
            call_args[n_prefix + 1] = key;
            call_args[n_prefix + 2] = value;
            call_args[n_prefix + 3] = headers;
            call_args[n_prefix + 4] = timestamp;
            record = PyObject_Vectorcall(make_record, call_args, n_call, NULL);
        }
        Py_XDECREF(offset);
        Py_XDECREF(timestamp);
        Py_DECREF(key);
        Py_DECREF(value);
        Py_DECREF(headers);
        if (record == NULL) goto fail;
        /* Its fields are bytes, ints, strings and tuples of them: it cannot be part of a reference cycle, so
           the cycle collector need not scan it (CPython untracks such tuples itself). A consumer's records
           would otherwise be scanned again and again while they wait in its buffers. */
        if (PyObject_GC_IsTracked(record)) PyObject_GC_UnTrack(record);
        PyList_SET_ITEM(records, i, record);
    }
    if (r.pos != r.end) {
        PyErr_Format(PyExc_ValueError, "%zd bytes after the last record of a batch", r.end - r.pos);
        goto fail;
    }
    goto done;
fail:
    Py_CLEAR(records);
done:
    PyBuffer_Release(&view);
    return records;
}

/* The timestamp of every record of a producer batch, kept until the batch's futures are read: 8 bytes
 * each, where a list kept an int object (32 bytes and an allocation) per record. */
typedef struct {
    PyObject_HEAD
    long long *items;
    Py_ssize_t length;
    Py_ssize_t capacity;
} Timestamps;

static PyTypeObject TimestampsType;

static PyObject *timestamps_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    if (PyTuple_GET_SIZE(args) != 0 || (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0)) {
        PyErr_SetString(PyExc_TypeError, "RecordTimestamps takes no arguments");
        return NULL;
    }
    Timestamps *self = (Timestamps *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->items = NULL;
    self->length = self->capacity = 0;
    return (PyObject *)self;
}

static void timestamps_dealloc(Timestamps *self) {
    PyMem_Free(self->items);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Room for `more` further items: 0, or -1 with MemoryError set. */
static int timestamps_reserve(Timestamps *self, Py_ssize_t more) {
    if (self->length + more <= self->capacity) return 0;
    Py_ssize_t capacity = self->capacity < 64 ? 64 : self->capacity;
    while (capacity < self->length + more) {
        if (capacity > PY_SSIZE_T_MAX / 2 / (Py_ssize_t)sizeof(long long)) {
            PyErr_NoMemory();
            return -1;
        }
        capacity *= 2;
    }
    long long *items = PyMem_Realloc(self->items, (size_t)capacity * sizeof(long long));
    if (items == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    self->items = items;
    self->capacity = capacity;
    return 0;
}

static PyObject *timestamps_append(Timestamps *self, PyObject *value) {
    long long stamp = PyLong_AsLongLong(value);
    if (stamp == -1 && PyErr_Occurred()) return NULL;
    if (timestamps_reserve(self, 1) < 0) return NULL;
    self->items[self->length++] = stamp;
    Py_RETURN_NONE;
}

static PyObject *timestamps_extend(Timestamps *self, PyObject *iterable) {
    PyObject *iterator = PyObject_GetIter(iterable);
    if (iterator == NULL) return NULL;
    PyObject *item;
    while ((item = PyIter_Next(iterator)) != NULL) {
        PyObject *done = timestamps_append(self, item);
        Py_DECREF(item);
        if (done == NULL) {
            Py_DECREF(iterator);
            return NULL;
        }
        Py_DECREF(done);
    }
    Py_DECREF(iterator);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

static Py_ssize_t timestamps_length(Timestamps *self) { return self->length; }

static PyObject *timestamps_item(Timestamps *self, Py_ssize_t index) {
    if (index < 0 || index >= self->length) {
        PyErr_SetString(PyExc_IndexError, "record timestamp index out of range");
        return NULL;
    }
    return PyLong_FromLongLong(self->items[index]);
}

static PyObject *timestamps_subscript(Timestamps *self, PyObject *key) {
    Py_ssize_t index = PyNumber_AsSsize_t(key, PyExc_IndexError);
    if (index == -1 && PyErr_Occurred()) return NULL;
    if (index < 0) index += self->length;
    return timestamps_item(self, index);
}

static PyMethodDef timestamps_methods[] = {
    {"append", (PyCFunction)timestamps_append, METH_O, "Add one record's timestamp (ms)."},
    {"extend", (PyCFunction)timestamps_extend, METH_O, "Add the timestamps of an iterable, in order."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods timestamps_as_sequence = {
    .sq_length = (lenfunc)timestamps_length,
    .sq_item = (ssizeargfunc)timestamps_item,
};

static PyMappingMethods timestamps_as_mapping = {
    .mp_length = (lenfunc)timestamps_length,
    .mp_subscript = (binaryfunc)timestamps_subscript,
};

static PyTypeObject TimestampsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkawire.protocol._records_speedups.RecordTimestamps",
    .tp_doc = "The timestamps (ms) of a producer batch's records, in order, packed.",
    .tp_basicsize = sizeof(Timestamps),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = timestamps_new,
    .tp_dealloc = (destructor)timestamps_dealloc,
    .tp_methods = timestamps_methods,
    .tp_as_sequence = &timestamps_as_sequence,
    .tp_as_mapping = &timestamps_as_mapping,
};

/* The open batch's records and the counters that go into its header: what BatchBuilder.add changes per
 * record, so that the producer's per-record path is one C call. records.py has the same class in Python. */
static PyObject *empty_headers; /* the records of add_now have none */

typedef struct {
    PyObject_HEAD
    PyObject *buffer; /* bytearray: the batch header's room, then the records */
    Py_ssize_t max_size;
    long long count;
    long long base_timestamp;
    long long max_timestamp;
} Appender;

static PyObject *appender_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *buffer;
    Py_ssize_t max_size;
    static char *names[] = {"buffer", "max_size", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!n:RecordAppender", names, &PyByteArray_Type, &buffer,
                                     &max_size)) {
        return NULL;
    }
    Appender *self = (Appender *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->buffer = Py_NewRef(buffer);
    self->max_size = max_size;
    self->count = 0;
    self->base_timestamp = 0;
    self->max_timestamp = -1;
    return (PyObject *)self;
}

static void appender_dealloc(Appender *self) {
    Py_CLEAR(self->buffer);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* add(timestamp, key, value, headers) -> the buffer's size after adding the record, or -1 if it does not fit
 * under max_size (the first record always fits). */
/* A record onto the open batch at `timestamp`, the counters moved on: 1 added, 0 refused (it does not fit; the
 * first record always does), -1 an error is set. */
static int appender_put(Appender *self, long long timestamp, PyObject *key, PyObject *value, PyObject *headers) {
    Py_ssize_t limit = self->max_size;
    if (self->count == 0) {
        self->base_timestamp = timestamp;
        limit = -1;
    }
    long long timestamp_delta;
    if (__builtin_sub_overflow(timestamp, self->base_timestamp, &timestamp_delta)) {
        PyErr_Format(PyExc_OverflowError, "record timestamp %lld is too far from the batch's first (%lld) for 64 bits",
                     timestamp, self->base_timestamp);
        return -1;
    }
    if (check_offset_delta(self->count) < 0) return -1;
    int appended = append_one(self->buffer, limit, self->count, timestamp_delta, key, value, headers);
    if (appended == 1) {
        if (timestamp > self->max_timestamp) self->max_timestamp = timestamp;
        self->count++;
    }
    return appended;
}

static PyObject *appender_add(Appender *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "add takes 4 arguments (timestamp, key, value, headers)");
        return NULL;
    }
    long long timestamp = PyLong_AsLongLong(args[0]);
    if (timestamp == -1 && PyErr_Occurred()) return NULL;
    int appended = appender_put(self, timestamp, args[1], args[2], args[3]);
    if (appended < 0) return NULL;
    return PyLong_FromSsize_t(appended ? PyByteArray_GET_SIZE(self->buffer) : -1);
}

/* add_now(value, timestamps): add() of a record with only a value, stamped now (the wall clock's milliseconds,
 * as time.time_ns() // 1_000_000), the stamp appended to `timestamps` when the record goes in. The producer's
 * loop of plain sends calls this once per record. */
static PyObject *appender_add_now(Appender *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyObject_TypeCheck(args[1], &TimestampsType)) {
        PyErr_SetString(PyExc_TypeError, "add_now takes (value, RecordTimestamps)");
        return NULL;
    }
    Timestamps *stamps = (Timestamps *)args[1];
    if (timestamps_reserve(stamps, 1) < 0) return NULL; /* before the record, so that both or neither change */
    struct timespec now;
    if (clock_gettime(CLOCK_REALTIME, &now) != 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return NULL;
    }
    long long timestamp = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    int appended = appender_put(self, timestamp, Py_None, args[0], empty_headers);
    if (appended < 0) return NULL;
    if (appended == 0) return PyLong_FromLong(-1);
    stamps->items[stamps->length++] = timestamp;
    return PyLong_FromSsize_t(PyByteArray_GET_SIZE(self->buffer));
}

/* reclaim(size) -> the buffer of a finished batch, cut back to its first ``size`` bytes (a new batch's header room)
 * with its allocation kept, as bytearray keeps it when it shrinks by less than half: the next batch writes into
 * memory already mapped, not fresh pages (a page fault costs more than the copy of the page). None, and the
 * buffer unchanged, unless this appender is all that holds it (a request written uncopied, a transport's
 * queue, a view: anything else that still refers to it keeps it as it is) and it has ``size`` bytes or more. */
static PyObject *appender_reclaim(Appender *self, PyObject *arg) {
    Py_ssize_t size = PyLong_AsSsize_t(arg);
    if (size == -1 && PyErr_Occurred()) return NULL;
    PyByteArrayObject *buffer = (PyByteArrayObject *)self->buffer;
    if (size < 0 || Py_REFCNT(buffer) != 1 || !PyByteArray_CheckExact(buffer) || buffer->ob_exports > 0 ||
        buffer->ob_start != buffer->ob_bytes || Py_SIZE(buffer) < size) {
        Py_RETURN_NONE;
    }
    Py_SET_SIZE(buffer, size);
    buffer->ob_start[size] = '\0'; /* bytearray keeps a NUL after its bytes */
    return Py_NewRef(buffer);
}

static PyMethodDef appender_methods[] = {
    {"reclaim", (PyCFunction)appender_reclaim, METH_O,
     "The finished batch's buffer cut back to size bytes with its memory kept, if nothing else holds it; else None."},
    {"add", (PyCFunction)(void (*)(void))appender_add, METH_FASTCALL,
     "Add a record; the bytes written so far after it, or -1 if it does not fit (the first always fits)."},
    {"add_now", (PyCFunction)(void (*)(void))appender_add_now, METH_FASTCALL,
     "add() of a value alone stamped with the current time (ms), the stamp appended to a RecordTimestamps."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef appender_members[] = {
    {"buffer", T_OBJECT_EX, offsetof(Appender, buffer), READONLY, "the batch header's room, then the records"},
    {"max_size", T_PYSSIZET, offsetof(Appender, max_size), READONLY, "the most bytes the records may take"},
    {"count", T_LONGLONG, offsetof(Appender, count), 0, "records added"},
    {"base_timestamp", T_LONGLONG, offsetof(Appender, base_timestamp), 0, "the first record's timestamp"},
    {"max_timestamp", T_LONGLONG, offsetof(Appender, max_timestamp), 0, "the largest timestamp added (-1: none)"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject AppenderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkawire.protocol._records_speedups.RecordAppender",
    .tp_doc = "The records of an open batch and the counters of its header.",
    .tp_basicsize = sizeof(Appender),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = appender_new,
    .tp_dealloc = (destructor)appender_dealloc,
    .tp_methods = appender_methods,
    .tp_members = appender_members,
};

static PyMethodDef methods[] = {
    {"append_record", (PyCFunction)(void (*)(void))append_record, METH_FASTCALL,
     "Append one varint-framed record to a batch buffer unless it would pass the limit (-1: none)."},
    {"append_records", (PyCFunction)(void (*)(void))append_records, METH_FASTCALL,
     "Append records start..stop of key, value and header lists until one would pass the limit; how many went in."},
    {"decode_records", (PyCFunction)(void (*)(void))decode_records, METH_FASTCALL,
     "The records of an uncompressed batch body, each make_record(*prefix, offset, key, value, headers, timestamp, *suffix)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_records_speedups", NULL, 0, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__records_speedups(void) {
    if (PyType_Ready(&AppenderType) < 0 || PyType_Ready(&TimestampsType) < 0) return NULL;
    if (empty_headers == NULL && (empty_headers = PyTuple_New(0)) == NULL) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "RecordAppender", (PyObject *)&AppenderType) < 0 ||
        PyModule_AddObjectRef(m, "RecordTimestamps", (PyObject *)&TimestampsType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
