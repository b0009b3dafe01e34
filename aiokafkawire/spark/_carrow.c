/*
 * Arrow buffers of consumer records, for the Spark data source (aiokafkawire.spark._kafka_io).
 *
 * record_columns(records) takes a list of ConsumerRecord tuples (topic, partition, offset,
 * timestamp, timestamp_type, key, value, headers, leader_epoch) and returns the raw Arrow buffers
 * of the offset, timestamp (microseconds), timestampType, key and value columns in one pass over
 * the list, without a Python object per row:
 *
 *   (offsets: bytes, int64 little-endian x n,
 *    timestamps_us: bytes, int64 x n,
 *    timestamp_types: bytes, int32 x n,
 *    key_validity: bytes | None, key_offsets: bytes (int32 x n+1), key_data: bytes, key_nulls,
 *    value_validity: bytes | None, value_offsets: bytes, value_data: bytes, value_nulls)
 *
 * A validity bitmap is None when the column has no null.  Input outside this fast path (an item
 * that is not a 9-tuple, a key or value that is neither bytes nor None, more than 2 GiB in a
 * column, a big-endian machine) raises TypeError or OverflowError, and the caller builds the
 * columns with pyarrow instead.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define FIELD_OFFSET 2
#define FIELD_TIMESTAMP 3
#define FIELD_TIMESTAMP_TYPE 4
#define FIELD_KEY 5
#define FIELD_VALUE 6
#define RECORD_FIELDS 9

static int
is_little_endian(void)
{
    const uint16_t probe = 1;
    return *(const uint8_t *)&probe == 1;
}

/* Total bytes and nulls of one binary column; -1 with an exception set when outside the path. */
static int
measure(PyObject *records, Py_ssize_t n, int field, Py_ssize_t *total, Py_ssize_t *nulls)
{
    Py_ssize_t size = 0, missing = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *record = PyList_GET_ITEM(records, i);
        if (!PyTuple_Check(record) || PyTuple_GET_SIZE(record) != RECORD_FIELDS) {
            PyErr_SetString(PyExc_TypeError, "records must be ConsumerRecord tuples");
            return -1;
        }
        PyObject *item = PyTuple_GET_ITEM(record, field);
        if (item == Py_None) {
            missing++;
        }
        else if (PyBytes_CheckExact(item)) {
            size += PyBytes_GET_SIZE(item);
            if (size > INT32_MAX) {
                PyErr_SetString(PyExc_OverflowError, "a column holds more than 2 GiB");
                return -1;
            }
        }
        else {
            PyErr_SetString(PyExc_TypeError, "keys and values must be bytes or None");
            return -1;
        }
    }
    *total = size;
    *nulls = missing;
    return 0;
}

/* Fill a binary column: (validity or None, offsets, data). New references in out[0..2]. */
static int
binary_column(PyObject *records, Py_ssize_t n, int field, Py_ssize_t total, Py_ssize_t nulls,
              PyObject **out)
{
    PyObject *validity = Py_None, *offsets = NULL, *data = NULL;
    Py_INCREF(Py_None);
    offsets = PyBytes_FromStringAndSize(NULL, (n + 1) * (Py_ssize_t)sizeof(int32_t));
    data = PyBytes_FromStringAndSize(NULL, total);
    if (offsets == NULL || data == NULL) {
        goto fail;
    }
    uint8_t *bits = NULL;
    if (nulls > 0) {
        Py_DECREF(validity);
        validity = PyBytes_FromStringAndSize(NULL, (n + 7) / 8);
        if (validity == NULL) {
            goto fail;
        }
        bits = (uint8_t *)PyBytes_AS_STRING(validity);
        memset(bits, 0, (size_t)((n + 7) / 8));
    }
    int32_t *offset = (int32_t *)PyBytes_AS_STRING(offsets);
    char *cursor = PyBytes_AS_STRING(data);
    int32_t position = 0;
    offset[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(PyList_GET_ITEM(records, i), field);
        if (item != Py_None) {
            Py_ssize_t length = PyBytes_GET_SIZE(item);
            memcpy(cursor + position, PyBytes_AS_STRING(item), (size_t)length);
            position += (int32_t)length;
            if (bits != NULL) {
                bits[i >> 3] |= (uint8_t)(1u << (i & 7));
            }
        }
        offset[i + 1] = position;
    }
    out[0] = validity;
    out[1] = offsets;
    out[2] = data;
    return 0;
fail:
    Py_XDECREF(validity);
    Py_XDECREF(offsets);
    Py_XDECREF(data);
    return -1;
}

static PyObject *
record_columns(PyObject *module, PyObject *records)
{
    (void)module;
    if (!PyList_Check(records)) {
        PyErr_SetString(PyExc_TypeError, "records must be a list");
        return NULL;
    }
    if (!is_little_endian()) {
        PyErr_SetString(PyExc_TypeError, "Arrow buffers are built on little-endian machines only");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(records);
    Py_ssize_t key_total, key_nulls, value_total, value_nulls;
    if (measure(records, n, FIELD_KEY, &key_total, &key_nulls) < 0 ||
        measure(records, n, FIELD_VALUE, &value_total, &value_nulls) < 0) {
        return NULL;
    }
    PyObject *offsets = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    PyObject *timestamps = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    PyObject *types = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
    PyObject *key[3] = {NULL, NULL, NULL};
    PyObject *value[3] = {NULL, NULL, NULL};
    if (offsets == NULL || timestamps == NULL || types == NULL) {
        goto fail;
    }
    int64_t *offset_out = (int64_t *)PyBytes_AS_STRING(offsets);
    int64_t *timestamp_out = (int64_t *)PyBytes_AS_STRING(timestamps);
    int32_t *type_out = (int32_t *)PyBytes_AS_STRING(types);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *record = PyList_GET_ITEM(records, i);
        long long offset = PyLong_AsLongLong(PyTuple_GET_ITEM(record, FIELD_OFFSET));
        long long timestamp = PyLong_AsLongLong(PyTuple_GET_ITEM(record, FIELD_TIMESTAMP));
        long kind = PyLong_AsLong(PyTuple_GET_ITEM(record, FIELD_TIMESTAMP_TYPE));
        if (PyErr_Occurred()) {
            goto fail;
        }
        offset_out[i] = (int64_t)offset;
        /* milliseconds to microseconds: Spark's timestamps are timestamp[us, tz=UTC] */
        timestamp_out[i] = (int64_t)timestamp * 1000;
        type_out[i] = (int32_t)kind;
    }
    if (binary_column(records, n, FIELD_KEY, key_total, key_nulls, key) < 0 ||
        binary_column(records, n, FIELD_VALUE, value_total, value_nulls, value) < 0) {
        goto fail;
    }
    return Py_BuildValue("(NNNNNNnNNNn)", offsets, timestamps, types, key[0], key[1], key[2],
                         key_nulls, value[0], value[1], value[2], value_nulls);
fail:
    Py_XDECREF(offsets);
    Py_XDECREF(timestamps);
    Py_XDECREF(types);
    for (int j = 0; j < 3; j++) {
        Py_XDECREF(key[j]);
        Py_XDECREF(value[j]);
    }
    return NULL;
}

static PyMethodDef methods[] = {
    {"record_columns", record_columns, METH_O,
     "Arrow buffers of the offset, timestamp, timestampType, key and value columns."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_carrow", "Arrow buffers of consumer records (Spark source).", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__carrow(void)
{
    return PyModule_Create(&module_def);
}
