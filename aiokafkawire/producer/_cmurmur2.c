/* murmur2 exactly as the Java client's Utils.murmur2 (seed 0x9747b28c), for the producer's keyed
 * partitioning hot path.  The pure-Python version in partitioner.py is the reference; the tests
 * check both agree.  Any object supporting the buffer protocol is accepted. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static uint32_t murmur2_unsigned(const unsigned char *data, Py_ssize_t length)
{
    const uint32_t m = 0x5bd1e995u;
    const int r = 24;
    uint32_t h = 0x9747b28cu ^ (uint32_t)length;
    Py_ssize_t blocks = length >> 2;
    for (Py_ssize_t i = 0; i < blocks; i++) {
        uint32_t k;
        memcpy(&k, data + 4 * i, 4); /* little-endian blocks, as Java reads them */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        k = __builtin_bswap32(k);
#endif
        k *= m;
        k ^= k >> r;
        k *= m;
        h *= m;
        h ^= k;
    }
    const unsigned char *tail = data + 4 * blocks;
    switch (length & 3) {
    case 3:
        h ^= (uint32_t)tail[2] << 16;
        /* fall through */
    case 2:
        h ^= (uint32_t)tail[1] << 8;
        /* fall through */
    case 1:
        h ^= (uint32_t)tail[0];
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h;
}

/* murmur2 of `key`: exact bytes read directly (the producer's common case), any other object
 * through the buffer protocol.  -1 with an exception if it has no buffer. */
static int hash_key(PyObject *key, uint32_t *h)
{
    if (PyBytes_CheckExact(key)) {
        *h = murmur2_unsigned((const unsigned char *)PyBytes_AS_STRING(key),
                              PyBytes_GET_SIZE(key));
        return 0;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(key, &view, PyBUF_SIMPLE) < 0)
        return -1;
    *h = murmur2_unsigned((const unsigned char *)view.buf, view.len);
    PyBuffer_Release(&view);
    return 0;
}

static PyObject *murmur2(PyObject *module, PyObject *arg)
{
    uint32_t h;
    if (hash_key(arg, &h) < 0)
        return NULL;
    return PyLong_FromLong((long)(int32_t)h);
}

static PyObject *partition_for_key(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "partition_for_key(key, partition_count)");
        return NULL;
    }
    Py_ssize_t count = PyLong_AsSsize_t(args[1]);
    if (count == -1 && PyErr_Occurred())
        return NULL;
    if (count <= 0) {
        PyErr_SetString(PyExc_ZeroDivisionError, "partition_count must be positive");
        return NULL;
    }
    uint32_t h;
    if (hash_key(args[0], &h) < 0)
        return NULL;
    return PyLong_FromSsize_t((Py_ssize_t)((h & 0x7fffffffu) % (uint64_t)count));
}

static PyMethodDef methods[] = {
    {"murmur2", murmur2, METH_O, "Java's Utils.murmur2 of a bytes-like object (signed 32-bit)."},
    {"partition_for_key", (PyCFunction)(void (*)(void))partition_for_key, METH_FASTCALL,
     "(murmur2(key) & 0x7fffffff) % partition_count, as the Java client partitions keys."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "aiokafkawire.producer._cmurmur2",
    "Compiled murmur2 for the producer's keyed partitioning.", -1, methods,
};

PyMODINIT_FUNC PyInit__cmurmur2(void) { return PyModule_Create(&module); }
