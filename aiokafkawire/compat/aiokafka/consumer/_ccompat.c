/*
 * aiokafka's ConsumerRecord built from aiokafkawire's, for the aiokafka compat consumer
 * (aiokafkawire.compat.aiokafka.consumer._records holds the pure-Python twin and the contract).
 *
 * compat_records(cls, records, key_deserializer, value_deserializer) -> list
 * compat_record(cls, record, key_deserializer, value_deserializer) -> cls instance
 *
 * ``records`` is a list of native ConsumerRecord tuples (topic, partition, offset, timestamp,
 * timestamp_type, key, value, headers, leader_epoch); ``cls`` is the compat ConsumerRecord
 * dataclass.  Each instance is allocated as ``object.__new__(cls)`` would and its eleven fields
 * are set as attributes in the dataclass's field order (what its ``__init__`` does, without
 * running Python code per field): the result is an ordinary instance of ``cls``.  The
 * serialized sizes are the lengths of the raw key and value (-1 for None); a deserializer (None
 * for none) is called on the raw key or value and any exception it raises propagates unchanged.
 * When the caller passes the only reference to ``records`` (``batches.pop(tp)`` straight into
 * the call) and there is no deserializer, the list is converted in place and returned: the
 * native records are freed one by one as their compat records are made.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NATIVE_FIELDS 9
#define N_NAMES 11

/* The compat ConsumerRecord's fields, in its dataclass order. */
static const char *const NAME_STRINGS[N_NAMES] = {
    "topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value",
    "checksum", "serialized_key_size", "serialized_value_size", "headers",
};
static PyObject *names[N_NAMES];
static PyObject *empty_args;

/* The length of a raw key or value, -1 for None; NULL with an exception when it has none. */
static PyObject *
raw_size(PyObject *item)
{
    if (item == Py_None) {
        return PyLong_FromLong(-1);
    }
    if (PyBytes_CheckExact(item)) {
        return PyLong_FromSsize_t(PyBytes_GET_SIZE(item));
    }
    Py_ssize_t size = PyObject_Length(item);
    return size < 0 ? NULL : PyLong_FromSsize_t(size);
}

/* A deserialized payload (a new reference), or the raw one when there is no deserializer. */
static PyObject *
deserialize(PyObject *deserializer, PyObject *raw)
{
    if (deserializer == Py_None) {
        return Py_NewRef(raw);
    }
    return PyObject_CallOneArg(deserializer, raw);
}

static PyObject *
build(PyTypeObject *cls, PyObject *native, PyObject *key_des, PyObject *value_des)
{
    if (!PyTuple_Check(native) || PyTuple_GET_SIZE(native) != NATIVE_FIELDS) {
        PyErr_SetString(PyExc_TypeError, "records must be aiokafkawire ConsumerRecord tuples");
        return NULL;
    }
    PyObject *raw_key = PyTuple_GET_ITEM(native, 5);
    PyObject *raw_value = PyTuple_GET_ITEM(native, 6);
    PyObject *values[N_NAMES] = {NULL};
    PyObject *record = NULL;
    values[8] = raw_size(raw_key);
    if (values[8] == NULL) {
        goto done;
    }
    values[9] = raw_size(raw_value);
    if (values[9] == NULL) {
        goto done;
    }
    values[5] = deserialize(key_des, raw_key);
    if (values[5] == NULL) {
        goto done;
    }
    values[6] = deserialize(value_des, raw_value);
    if (values[6] == NULL) {
        goto done;
    }
    for (int i = 0; i < 5; i++) {
        values[i] = Py_NewRef(PyTuple_GET_ITEM(native, i));
    }
    values[7] = Py_NewRef(Py_None);
    values[10] = Py_NewRef(PyTuple_GET_ITEM(native, 7));
    /* object.__new__(cls): it also lays out the instance's attribute values for the class's
     * shared keys, so the attributes set below fill them in place. */
    record = PyBaseObject_Type.tp_new(cls, empty_args, NULL);
    if (record == NULL) {
        goto done;
    }
    /* The class's own attribute setting (checked by check_class: object's generic one). */
    for (int i = 0; i < N_NAMES; i++) {
        if (PyObject_GenericSetAttr(record, names[i], values[i]) < 0) {
            Py_CLEAR(record);
            goto done;
        }
    }
done:
    for (int i = 0; i < N_NAMES; i++) {
        Py_XDECREF(values[i]);
    }
    return record;
}

/* The class argument: instances made and filled as object's __new__ and __setattr__ do. */
static PyTypeObject *
check_class(PyObject *cls)
{
    if (!PyType_Check(cls) || ((PyTypeObject *)cls)->tp_new != PyBaseObject_Type.tp_new ||
        ((PyTypeObject *)cls)->tp_setattro != PyObject_GenericSetAttr) {
        PyErr_SetString(PyExc_TypeError,
                        "cls must be a class with object's __new__ and __setattr__");
        return NULL;
    }
    return (PyTypeObject *)cls;
}

/* The caller handed over the only reference to ``records`` (nothing else can see the list):
 * each native record is replaced by its compat record, so the native one is freed at once.
 * The cyclic GC counts an allocation less for each object freed: the conversion does not
 * bring on collections that would age the new records into older generations. */
static PyObject *
convert_in_place(PyTypeObject *cls, PyObject *records, Py_ssize_t n, PyObject *key_des,
                 PyObject *value_des)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *native = PyList_GET_ITEM(records, i);
        PyObject *record = build(cls, native, key_des, value_des);
        if (record == NULL) {
            return NULL;
        }
        PyList_SET_ITEM(records, i, record);
        Py_DECREF(native);
    }
    return Py_NewRef(records);
}

static PyObject *
compat_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "compat_records takes 4 arguments");
        return NULL;
    }
    PyTypeObject *cls = check_class(args[0]);
    if (cls == NULL) {
        return NULL;
    }
    PyObject *records = args[1];
    if (!PyList_Check(records)) {
        PyErr_SetString(PyExc_TypeError, "records must be a list");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(records);
    /* In place only when no Python code runs meanwhile (no deserializer): nothing can reach
     * the list while it holds native and compat records side by side. */
    if (Py_REFCNT(records) == 1 && PyList_CheckExact(records) && args[2] == Py_None &&
        args[3] == Py_None) {
        return convert_in_place(cls, records, n, args[2], args[3]);
    }
    PyObject *out = PyList_New(n);
    if (out == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        /* A deserializer may run Python code: hold the item while it is in use. */
        PyObject *native = Py_NewRef(PyList_GET_ITEM(records, i));
        PyObject *record = build(cls, native, args[2], args[3]);
        Py_DECREF(native);
        if (record == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, record);
        if (PyList_GET_SIZE(records) != n) {
            Py_DECREF(out);
            PyErr_SetString(PyExc_RuntimeError, "records changed size during conversion");
            return NULL;
        }
    }
    return out;
}

static PyObject *
compat_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "compat_record takes 4 arguments");
        return NULL;
    }
    PyTypeObject *cls = check_class(args[0]);
    if (cls == NULL) {
        return NULL;
    }
    return build(cls, args[1], args[2], args[3]);
}

static PyMethodDef methods[] = {
    {"compat_records", (PyCFunction)(void (*)(void))compat_records, METH_FASTCALL,
     "compat_records(cls, records, key_deserializer, value_deserializer) -> list"},
    {"compat_record", (PyCFunction)(void (*)(void))compat_record, METH_FASTCALL,
     "compat_record(cls, record, key_deserializer, value_deserializer) -> cls instance"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "aiokafkawire.compat.aiokafka.consumer._ccompat",
    "aiokafka's ConsumerRecord built in C for the aiokafka compat consumer.", -1, methods,
};

PyMODINIT_FUNC
PyInit__ccompat(void)
{
    for (int i = 0; i < N_NAMES; i++) {
        if (names[i] == NULL) {
            names[i] = PyUnicode_InternFromString(NAME_STRINGS[i]);
            if (names[i] == NULL) {
                return NULL;
            }
        }
    }
    if (empty_args == NULL) {
        empty_args = PyTuple_New(0);
        if (empty_args == NULL) {
            return NULL;
        }
    }
    return PyModule_Create(&module);
}
