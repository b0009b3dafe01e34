/* The C interface the records accelerator offers other extensions, through a capsule:
 * builder_append as a C function and the builder class it is registered for.  _crecords.c fills
 * it; producer/_cproducer.c calls it (the fast path of Producer.send), checking builder_type
 * before every call. */
#ifndef AIOKAFKAWIRE_CRECORDS_API_H
#define AIOKAFKAWIRE_CRECORDS_API_H

#include <Python.h>

#define CRECORDS_MODULE "aiokafkawire.protocol.records._crecords"
#define CRECORDS_API_ATTRIBUTE "_api"
#define CRECORDS_API_CAPSULE CRECORDS_MODULE "." CRECORDS_API_ATTRIBUTE

typedef struct {
    PyObject *(*builder_append)(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames);
    PyTypeObject **builder_type; /* points at NULL while no builder class is registered */
} CRecordsApi;

#endif
