/* The common case of Producer.send in one C call.
 *
 * FastSend(...).send(topic, value, key, partition, timestamp, headers) appends a record
 * (default partitioner, bytes or None key and value, no explicit partition, timestamp or
 * headers) to the open batch of its partition and returns its DeliveryHandle, exactly as the
 * Python path of Producer.send does.  A keyless record goes to the topic's current sticky
 * partition, read from the partitioner's table (never chosen here: none yet is a decline).  Whenever anything is not the plain case (send checks on,
 * a fatal transaction error, an unknown topic or stale partition cache, an oversized record, no
 * open batch, a full batch, ...) it returns None *before any side effect* and the caller takes
 * the Python path, which stays complete and authoritative.  Errors raised by the operations
 * both paths share (reading the metadata, the builder's append) propagate unchanged.
 *
 * DeliveryHandle and ProducerBatch are __slots__ classes: their slots are read and written at
 * the offsets of their member descriptors, checked when the FastSend is made. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <time.h>

#include "../protocol/records/_crecords_api.h"

#if defined(CLOCK_REALTIME) && !defined(_WIN32)
#define HAVE_DIRECT_CLOCK 1
#else
#define HAVE_DIRECT_CLOCK 0
#endif

typedef struct {
    PyObject_HEAD
    PyObject *producer;        /* for _send_checks and _cached_metadata, read on every call */
    PyObject *batches;         /* dict: TopicPartition -> deque[ProducerBatch] */
    PyObject *partition_cache; /* dict: topic -> (all partitions, available partitions) */
    PyObject *cluster;         /* .metadata */
    PyObject *txn;             /* .fatal */
    PyObject *keyed;           /* partition_for_key(key, count) */
    PyObject *sticky;          /* dict: topic -> the sticky partition of keyless records */
    PyObject *clock;           /* time.time */
    PyTypeObject *batch_type;  /* ProducerBatch */
    PyTypeObject *handle_type; /* DeliveryHandle */
    int direct_clock;          /* clock is time.time: read the system clock here */
    int native_handle;         /* handle_type is this module's Handle (C index), not a class */
    Py_ssize_t max_record_size;
    Py_ssize_t overhead;
    Py_ssize_t off_builder, off_closed, off_count;           /* ProducerBatch slots */
    Py_ssize_t off_h_batch, off_h_index, off_h_timestamp;     /* DeliveryHandle slots (-1: C) */
} FastSend;

static PyObject *str_send_checks, *str_cached_metadata, *str_metadata, *str_fatal, *str_append;

/* The records accelerator's builder append as a C function (_crecords_api.h): called
 * directly, not as a method, when the builder is of the class it is registered for.  NULL when
 * _crecords is not built; the method call then does the same. */
static CRecordsApi *records_api;

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

/* The offset of the writable object slot `name` defined by `type` itself, or -1 (error set). */
static Py_ssize_t slot_offset(PyTypeObject *type, const char *name)
{
    PyObject *descr = PyDict_GetItemString(type->tp_dict, name); /* borrowed */
    if (descr == NULL || !PyObject_TypeCheck(descr, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a __slots__ member", type->tp_name, name);
        return -1;
    }
    PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
    if (member->type != T_OBJECT_EX || (member->flags & READONLY) || member->offset <= 0) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a writable object slot", type->tp_name, name);
        return -1;
    }
    return member->offset;
}

/* ------------------------------------------------------------------ delivery handles
 *
 * untracked_handle_type() makes a type with DeliveryHandle's three slots that the cyclic garbage
 * collector does not track: a service holding 100,000 pending handles otherwise pays for them in
 * every collection (about a tenth of the time of 1,000 concurrent senders).  A handle points to its
 * batch and never the other way, so it cannot close a reference cycle of its own.  The Python
 * module copies DeliveryHandle's methods onto the type, so both paths share one definition.
 * Its __await__ answers a delivered record here (no generator, no exception object), and
 * leaves a pending one to the Python method ``_await_pending``. */

typedef struct {
    PyObject_HEAD
    PyObject *batch;
    /* C integers: a pending handle keeps no object alive but its batch (thousands of pending
     * handles stay small and together in memory, which their awaits notice). */
    long long index;
    long long timestamp;
} Handle;

static PyObject *str_await_pending;
static PyTypeObject *metadata_type; /* RecordMetadata, a tuple subclass */
static PyTypeObject *handle_batch_type; /* ProducerBatch; a handle's __await__ reads these slots: */
static Py_ssize_t off_outcome, off_topic, off_partition;

static PyMemberDef Handle_members[] = {
    {"_batch", T_OBJECT_EX, offsetof(Handle, batch), 0, NULL},
    {"_index", T_LONGLONG, offsetof(Handle, index), 0, NULL},
    {"_timestamp", T_LONGLONG, offsetof(Handle, timestamp), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyObject *Handle_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *batch;
    long long index, timestamp;
    static char *kwlist[] = {"batch", "index", "timestamp", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OLL:DeliveryHandle", kwlist, &batch, &index,
                                     &timestamp))
        return NULL;
    Handle *self = (Handle *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    Py_INCREF(batch);
    self->batch = batch;
    self->index = index;
    self->timestamp = timestamp;
    return (PyObject *)self;
}

static void Handle_dealloc(Handle *self)
{
    PyTypeObject *type = Py_TYPE(self);
    Py_CLEAR(self->batch);
    type->tp_free((PyObject *)self);
    Py_DECREF(type); /* instances of heap types hold a reference to their type */
}

/* An awaitable's iterator that is already finished: it returns ``value`` at once. */
typedef struct {
    PyObject_HEAD
    PyObject *value;
} Ready;

static void Ready_dealloc(Ready *self)
{
    Py_CLEAR(self->value);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PySendResult Ready_send(Ready *self, PyObject *arg, PyObject **result)
{
    if (self->value == NULL) { /* resumed after it finished: like an exhausted generator */
        *result = NULL;
        PyErr_SetNone(PyExc_StopIteration);
        return PYGEN_ERROR;
    }
    *result = self->value;
    self->value = NULL;
    return PYGEN_RETURN;
}

static PyObject *Ready_next(Ready *self)
{
    PyObject *value = self->value;
    if (value == NULL)
        return NULL; /* StopIteration without a value */
    self->value = NULL;
    /* A tuple value must be wrapped, or StopIteration would take it as its arguments. */
    PyObject *stop = PyObject_CallOneArg(PyExc_StopIteration, value);
    Py_DECREF(value);
    if (stop != NULL) {
        PyErr_SetObject(PyExc_StopIteration, stop);
        Py_DECREF(stop);
    }
    return NULL;
}

static PyAsyncMethods Ready_async = {.am_send = (sendfunc)Ready_send};

static PyTypeObject Ready_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "aiokafkawire.producer._cproducer.Ready",
    .tp_basicsize = sizeof(Ready),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The finished iterator of an awaited, already delivered record.",
    .tp_dealloc = (destructor)Ready_dealloc,
    .tp_as_async = &Ready_async,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)Ready_next,
};

/* The RecordMetadata of a delivered handle; NULL without an exception when the Python method
 * must answer (pending, failed, or not a plain ProducerBatch); NULL with one on errors. */
static PyObject *handle_metadata(Handle *self)
{
    PyObject *batch = self->batch;
    if (batch == NULL || metadata_type == NULL || Py_TYPE(batch) != handle_batch_type)
        return NULL;
    PyObject *outcome = SLOT(batch, off_outcome); /* (base_offset, log_append_time) or None */
    PyObject *topic = SLOT(batch, off_topic), *partition = SLOT(batch, off_partition);
    if (outcome == NULL || !PyTuple_CheckExact(outcome) || PyTuple_GET_SIZE(outcome) != 2 ||
        topic == NULL || partition == NULL)
        return NULL;
    PyObject *base = PyTuple_GET_ITEM(outcome, 0), *appended = PyTuple_GET_ITEM(outcome, 1);
    /* ...AndOverflow: 3.11's PyLong_AsLongLong takes a slow byte-array path above 2**30. */
    int overflow_base, overflow_appended;
    long long base_offset = PyLong_AsLongLongAndOverflow(base, &overflow_base);
    if (base_offset == -1 && PyErr_Occurred())
        return NULL;
    long long log_append_time = PyLong_AsLongLongAndOverflow(appended, &overflow_appended);
    if (log_append_time == -1 && PyErr_Occurred())
        return NULL;
    if (overflow_base || overflow_appended)
        return NULL; /* not from a broker: the Python method answers */
    PyObject *offset = PyLong_FromLongLong(base_offset >= 0 ? base_offset + self->index : -1);
    if (offset == NULL)
        return NULL;
    PyObject *timestamp;
    if (log_append_time >= 0) {
        Py_INCREF(appended);
        timestamp = appended;
    }
    else {
        timestamp = PyLong_FromLongLong(self->timestamp);
        if (timestamp == NULL) {
            Py_DECREF(offset);
            return NULL;
        }
    }
    PyObject *result = metadata_type->tp_alloc(metadata_type, 4);
    if (result == NULL) {
        Py_DECREF(offset);
        Py_DECREF(timestamp);
        return NULL;
    }
    Py_INCREF(topic);
    PyTuple_SET_ITEM(result, 0, topic);
    Py_INCREF(partition);
    PyTuple_SET_ITEM(result, 1, partition);
    PyTuple_SET_ITEM(result, 2, offset);
    PyTuple_SET_ITEM(result, 3, timestamp);
    return result;
}

/* One Ready is kept and reused while nobody else holds it: awaiting a delivered record then
 * allocates only its RecordMetadata (the await drops the iterator as soon as it returns). */
static Ready *spare_ready;

static PyObject *Handle_await(Handle *self)
{
    PyObject *metadata = handle_metadata(self);
    if (metadata == NULL) {
        if (PyErr_Occurred())
            return NULL;
        /* Pending or failed: the Python method waits for (or raises from) the future. */
        PyObject *args[1] = {(PyObject *)self};
        return PyObject_VectorcallMethod(str_await_pending, args,
                                         1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    Ready *ready = spare_ready;
    if (ready != NULL && Py_REFCNT(ready) == 1) {
        Py_INCREF(ready);
    }
    else {
        ready = PyObject_New(Ready, &Ready_Type);
        if (ready == NULL) {
            Py_DECREF(metadata);
            return NULL;
        }
        ready->value = NULL;
        if (spare_ready == NULL) {
            Py_INCREF(ready);
            spare_ready = ready;
        }
    }
    Py_XSETREF(ready->value, metadata); /* a dropped, never iterated one may still hold one */
    return (PyObject *)ready;
}

static PyType_Slot Handle_slots[] = {
    {Py_tp_new, Handle_new},
    {Py_tp_dealloc, Handle_dealloc},
    {Py_tp_members, Handle_members},
    {Py_am_await, Handle_await},
    {0, NULL},
};

static PyType_Spec Handle_spec = {
    .name = "aiokafkawire.producer._batch.DeliveryHandle",
    .basicsize = sizeof(Handle),
    .itemsize = 0,
    .flags = Py_TPFLAGS_DEFAULT, /* no Py_TPFLAGS_HAVE_GC: the point of the type */
    .slots = Handle_slots,
};

static PyObject *untracked_handle_type(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyType_Check(args[0]) || !PyType_Check(args[1]) ||
        !PyType_IsSubtype((PyTypeObject *)args[0], &PyTuple_Type) ||
        ((PyTypeObject *)args[0])->tp_basicsize != PyTuple_Type.tp_basicsize) {
        PyErr_SetString(PyExc_TypeError,
                        "untracked_handle_type(RecordMetadata: a tuple type, ProducerBatch)");
        return NULL;
    }
    PyTypeObject *batch_type = (PyTypeObject *)args[1];
    Py_ssize_t outcome = slot_offset(batch_type, "outcome"),
               topic = slot_offset(batch_type, "topic"),
               partition = slot_offset(batch_type, "partition");
    if (PyErr_Occurred())
        return NULL;
    off_outcome = outcome;
    off_topic = topic;
    off_partition = partition;
    Py_INCREF(args[0]);
    Py_XSETREF(metadata_type, (PyTypeObject *)args[0]);
    Py_INCREF(args[1]);
    Py_XSETREF(handle_batch_type, batch_type);
    return PyType_FromSpec(&Handle_spec);
}

static int FastSend_init(FastSend *self, PyObject *args, PyObject *kwds)
{
    PyObject *producer, *batches, *partition_cache, *cluster, *txn, *keyed, *sticky, *clock;
    PyObject *batch_type, *handle_type;
    Py_ssize_t max_record_size, overhead;
    static char *kwlist[] = {"producer",   "batches",     "partition_cache", "cluster",
                             "txn",        "keyed",       "sticky",          "clock",
                             "batch_type", "handle_type", "max_record_size", "overhead",
                             NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!O!OOOO!OO!O!nn:FastSend", kwlist, &producer,
                                     &PyDict_Type, &batches, &PyDict_Type, &partition_cache,
                                     &cluster, &txn, &keyed, &PyDict_Type, &sticky, &clock,
                                     &PyType_Type, &batch_type, &PyType_Type, &handle_type,
                                     &max_record_size, &overhead))
        return -1;
    if (!PyCallable_Check(keyed) || !PyCallable_Check(clock)) {
        PyErr_SetString(PyExc_TypeError, "keyed and clock must be callable");
        return -1;
    }
    PyTypeObject *bt = (PyTypeObject *)batch_type, *ht = (PyTypeObject *)handle_type;
    if ((ht->tp_new != PyBaseObject_Type.tp_new && ht->tp_new != Handle_new) ||
        ht->tp_alloc == NULL) {
        PyErr_SetString(PyExc_TypeError, "handle_type must use object.__new__");
        return -1;
    }
    Py_ssize_t off_builder = slot_offset(bt, "builder"), off_closed = slot_offset(bt, "closed"),
               off_count = slot_offset(bt, "count");
    int native_handle = ht->tp_new == Handle_new;
    Py_ssize_t off_h_batch, off_h_index = -1, off_h_timestamp = -1;
    if (native_handle) {
        off_h_batch = offsetof(Handle, batch);
    }
    else {
        off_h_batch = slot_offset(ht, "_batch");
        off_h_index = slot_offset(ht, "_index");
        off_h_timestamp = slot_offset(ht, "_timestamp");
    }
    if (PyErr_Occurred())
        return -1;
    int direct_clock = 0;
#if HAVE_DIRECT_CLOCK
    PyObject *time_module = PyImport_ImportModule("time");
    if (time_module == NULL)
        return -1;
    PyObject *time_time = PyObject_GetAttrString(time_module, "time");
    Py_DECREF(time_module);
    if (time_time == NULL)
        return -1;
    direct_clock = clock == time_time;
    Py_DECREF(time_time);
#endif
    self->direct_clock = direct_clock;
    self->native_handle = native_handle;
    self->off_builder = off_builder;
    self->off_closed = off_closed;
    self->off_count = off_count;
    self->off_h_batch = off_h_batch;
    self->off_h_index = off_h_index;
    self->off_h_timestamp = off_h_timestamp;
    self->max_record_size = max_record_size;
    self->overhead = overhead;
    Py_INCREF(producer);
    Py_XSETREF(self->producer, producer);
    Py_INCREF(batches);
    Py_XSETREF(self->batches, batches);
    Py_INCREF(partition_cache);
    Py_XSETREF(self->partition_cache, partition_cache);
    Py_INCREF(cluster);
    Py_XSETREF(self->cluster, cluster);
    Py_INCREF(txn);
    Py_XSETREF(self->txn, txn);
    Py_INCREF(keyed);
    Py_XSETREF(self->keyed, keyed);
    Py_INCREF(sticky);
    Py_XSETREF(self->sticky, sticky);
    Py_INCREF(clock);
    Py_XSETREF(self->clock, clock);
    Py_INCREF(batch_type);
    Py_XSETREF(self->batch_type, bt);
    Py_INCREF(handle_type);
    Py_XSETREF(self->handle_type, ht);
    return 0;
}

static int FastSend_traverse(FastSend *self, visitproc visit, void *arg)
{
    Py_VISIT(self->producer);
    Py_VISIT(self->batches);
    Py_VISIT(self->partition_cache);
    Py_VISIT(self->cluster);
    Py_VISIT(self->txn);
    Py_VISIT(self->keyed);
    Py_VISIT(self->sticky);
    Py_VISIT(self->clock);
    Py_VISIT(self->batch_type);
    Py_VISIT(self->handle_type);
    return 0;
}

static int FastSend_clear(FastSend *self)
{
    Py_CLEAR(self->producer);
    Py_CLEAR(self->batches);
    Py_CLEAR(self->partition_cache);
    Py_CLEAR(self->cluster);
    Py_CLEAR(self->txn);
    Py_CLEAR(self->keyed);
    Py_CLEAR(self->sticky);
    Py_CLEAR(self->clock);
    Py_CLEAR(self->batch_type);
    Py_CLEAR(self->handle_type);
    return 0;
}

static void FastSend_dealloc(FastSend *self)
{
    PyObject_GC_UnTrack(self);
    FastSend_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

#if HAVE_DIRECT_CLOCK
/* time.time() as CPython computes it on POSIX: CLOCK_REALTIME in integer nanoseconds, then
 * _PyTime_AsSecondsDouble (whole seconds converted exactly, else nanoseconds / 1e9).  Returns -1.0
 * with an exception set if the clock cannot be read. */
static double wall_clock_seconds(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1.0;
    }
    int64_t t = (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
    volatile double d;
    if (t % 1000000000 == 0) {
        d = (double)(t / 1000000000);
    }
    else {
        d = (double)t;
        d /= 1e9;
    }
    return d;
}
#endif

/* 1: the object is truthy, 0: falsy, -1: error. */
static int attr_is_true(PyObject *obj, PyObject *name)
{
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL)
        return -1;
    int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

#define SLOW_PATH() Py_RETURN_NONE

static PyObject *FastSend_send(FastSend *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "send(topic, value, key, partition, timestamp, headers)");
        return NULL;
    }
    if (self->producer == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "FastSend is not initialized");
        return NULL;
    }
    PyObject *topic = args[0], *value = args[1], *key = args[2];
    if (args[3] != Py_None || args[4] != Py_None || args[5] != Py_None)
        SLOW_PATH();
    if (key != Py_None && !PyBytes_CheckExact(key))
        SLOW_PATH();
    if (value != Py_None && !PyBytes_CheckExact(value))
        SLOW_PATH();

    int truth = attr_is_true(self->producer, str_send_checks);
    if (truth < 0)
        return NULL;
    if (truth)
        SLOW_PATH(); /* not started, closed, serializers, transactions: checks in Python */
    PyObject *fatal = PyObject_GetAttr(self->txn, str_fatal);
    if (fatal == NULL)
        return NULL;
    int has_fatal = fatal != Py_None;
    Py_DECREF(fatal);
    if (has_fatal)
        SLOW_PATH();

    Py_ssize_t size = self->overhead;
    if (key != Py_None)
        size += PyBytes_GET_SIZE(key);
    if (value != Py_None)
        size += PyBytes_GET_SIZE(value);
    if (size > self->max_record_size)
        SLOW_PATH();

    PyObject *metadata = PyObject_GetAttr(self->cluster, str_metadata);
    if (metadata == NULL)
        return NULL;
    PyObject *cached_metadata = PyObject_GetAttr(self->producer, str_cached_metadata);
    if (cached_metadata == NULL) {
        Py_DECREF(metadata);
        return NULL;
    }
    int stale = metadata != cached_metadata;
    Py_DECREF(metadata);
    Py_DECREF(cached_metadata);
    if (stale)
        SLOW_PATH(); /* the Python path resets the partition cache */

    PyObject *cached = PyDict_GetItemWithError(self->partition_cache, topic); /* borrowed */
    if (cached == NULL) {
        if (PyErr_Occurred())
            return NULL;
        SLOW_PATH();
    }
    if (!PyTuple_CheckExact(cached) || PyTuple_GET_SIZE(cached) != 2)
        SLOW_PATH();
    Py_ssize_t count = PyObject_Size(PyTuple_GET_ITEM(cached, 0));
    if (count < 0)
        return NULL;
    PyObject *partition;
    if (key == Py_None) {
        /* The partitioner's sticky partition, as long as it has one that is still valid. */
        partition = PyDict_GetItemWithError(self->sticky, topic); /* borrowed */
        if (partition == NULL) {
            if (PyErr_Occurred())
                return NULL;
            SLOW_PATH(); /* none yet: the partitioner chooses one, in Python */
        }
        if (!PyLong_CheckExact(partition))
            SLOW_PATH();
        Py_ssize_t current = PyLong_AsSsize_t(partition);
        if (current == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            SLOW_PATH();
        }
        if (current < 0 || current >= count)
            SLOW_PATH();
        Py_INCREF(partition);
    }
    else {
        PyObject *count_obj = PyLong_FromSsize_t(count);
        if (count_obj == NULL)
            return NULL;
        PyObject *call_args[2] = {key, count_obj};
        partition = PyObject_Vectorcall(self->keyed, call_args, 2, NULL);
        Py_DECREF(count_obj);
        if (partition == NULL)
            return NULL;
    }

    PyObject *tp = PyTuple_Pack(2, topic, partition);
    Py_DECREF(partition);
    if (tp == NULL)
        return NULL;
    PyObject *queue = PyDict_GetItemWithError(self->batches, tp); /* borrowed */
    Py_DECREF(tp);
    if (queue == NULL) {
        if (PyErr_Occurred())
            return NULL;
        SLOW_PATH();
    }
    Py_ssize_t queued = PyObject_Size(queue);
    if (queued < 0)
        return NULL;
    if (queued == 0)
        SLOW_PATH();
    PyObject *batch = PySequence_GetItem(queue, queued - 1);
    if (batch == NULL)
        return NULL;
    PyObject *result = NULL;
    if (Py_TYPE(batch) != self->batch_type)
        goto slow;
    PyObject *closed = SLOT(batch, self->off_closed);
    PyObject *index = SLOT(batch, self->off_count);
    PyObject *builder = SLOT(batch, self->off_builder);
    if (closed != Py_False || index == NULL || !PyLong_CheckExact(index) || builder == NULL ||
        builder == Py_None)
        goto slow;
    Py_INCREF(index);
    Py_INCREF(builder);

    double now_s;
#if HAVE_DIRECT_CLOCK
    if (self->direct_clock)
        now_s = wall_clock_seconds();
    else
#endif
    {
        PyObject *now = PyObject_CallNoArgs(self->clock);
        if (now == NULL)
            goto error_index;
        now_s = PyFloat_AsDouble(now);
        Py_DECREF(now);
    }
    if (now_s == -1.0 && PyErr_Occurred())
        goto error_index;
    double now_ms = now_s * 1000.0;
    /* int(time() * 1000) truncates, as the cast does; a clock outside int64 milliseconds (or
     * not a number) is left to the Python path. */
    if (!(now_ms > -9.2e18 && now_ms < 9.2e18)) {
        Py_DECREF(builder);
        Py_DECREF(index);
        goto slow;
    }
    long long timestamp_ms = (long long)now_ms;
    PyObject *timestamp = PyLong_FromLongLong(timestamp_ms);
    if (timestamp == NULL)
        goto error_index;

    PyObject *append_args[5] = {builder, timestamp, key, value, Py_None};
    PyObject *appended;
    if (records_api != NULL && *records_api->builder_type != NULL &&
        Py_TYPE(builder) == *records_api->builder_type)
        appended = records_api->builder_append(NULL, append_args, 5, NULL);
    else
        appended = PyObject_VectorcallMethod(str_append, append_args,
                                             5 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    if (appended == NULL)
        goto error_timestamp;
    truth = PyObject_IsTrue(appended);
    Py_DECREF(appended);
    if (truth < 0)
        goto error_timestamp;
    if (truth == 0) {
        /* The batch is full: nothing was appended; the Python path opens the next batch. */
        Py_DECREF(timestamp);
        Py_DECREF(builder);
        Py_DECREF(index);
        goto slow;
    }
    Py_DECREF(builder);

    Py_ssize_t position = PyLong_AsSsize_t(index);
    PyObject *next = position == -1 && PyErr_Occurred() ? NULL : PyLong_FromSsize_t(position + 1);
    if (next == NULL) {
        Py_DECREF(timestamp);
        Py_DECREF(index);
        goto done;
    }
    Py_XSETREF(SLOT(batch, self->off_count), next);

    PyObject *handle = self->handle_type->tp_alloc(self->handle_type, 0);
    if (handle == NULL) {
        Py_DECREF(timestamp);
        Py_DECREF(index);
        goto done;
    }
    /* New references move into the handle's slots. */
    Py_INCREF(batch);
    SLOT(handle, self->off_h_batch) = batch;
    if (self->native_handle) {
        Handle *native = (Handle *)handle;
        native->index = position;
        native->timestamp = timestamp_ms;
        Py_DECREF(index);
        Py_DECREF(timestamp);
    }
    else {
        SLOT(handle, self->off_h_index) = index;
        SLOT(handle, self->off_h_timestamp) = timestamp;
    }
    result = handle;
    goto done;

error_timestamp:
    Py_DECREF(timestamp);
error_index:
    Py_DECREF(builder);
    Py_DECREF(index);
    goto done;
slow:
    Py_INCREF(Py_None);
    result = Py_None;
done:
    Py_DECREF(batch);
    return result;
}

static PyMethodDef FastSend_methods[] = {
    {"send", (PyCFunction)(void (*)(void))FastSend_send, METH_FASTCALL,
     "send(topic, value, key, partition, timestamp, headers) -> DeliveryHandle, or None for "
     "the Python path."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject FastSend_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "aiokafkawire.producer._cproducer.FastSend",
    .tp_basicsize = sizeof(FastSend),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The common case of Producer.send (see the module docstring).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)FastSend_init,
    .tp_dealloc = (destructor)FastSend_dealloc,
    .tp_traverse = (traverseproc)FastSend_traverse,
    .tp_clear = (inquiry)FastSend_clear,
    .tp_methods = FastSend_methods,
};

static PyMethodDef module_methods[] = {
    {"untracked_handle_type", (PyCFunction)(void (*)(void))untracked_handle_type, METH_FASTCALL,
     "untracked_handle_type(RecordMetadata, ProducerBatch) -> a new DeliveryHandle type outside "
     "the cyclic GC, with the slots _batch, _index and _timestamp and a C __await__ that reads "
     "a delivered batch's slots (the methods are to be added)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "aiokafkawire.producer._cproducer",
    "The producer's send fast path in C.", -1, module_methods,
};

static PyObject *intern(const char *name)
{
    return PyUnicode_InternFromString(name);
}

PyMODINIT_FUNC PyInit__cproducer(void)
{
    if (str_send_checks == NULL) {
        if ((str_send_checks = intern("_send_checks")) == NULL ||
            (str_cached_metadata = intern("_cached_metadata")) == NULL ||
            (str_metadata = intern("metadata")) == NULL || (str_fatal = intern("fatal")) == NULL ||
            (str_append = intern("append")) == NULL ||
            (str_await_pending = intern("_await_pending")) == NULL)
            return NULL;
    }
    if (PyType_Ready(&FastSend_Type) < 0 || PyType_Ready(&Ready_Type) < 0)
        return NULL;
    if (records_api == NULL) {
        /* PyCapsule_Import would only import "aiokafkawire" and then look up attributes. */
        PyObject *records = PyImport_ImportModule(CRECORDS_MODULE);
        PyObject *capsule = records ? PyObject_GetAttrString(records, CRECORDS_API_ATTRIBUTE)
                                    : NULL;
        records_api = capsule ? PyCapsule_GetPointer(capsule, CRECORDS_API_CAPSULE) : NULL;
        Py_XDECREF(capsule); /* the module keeps it, and the module stays imported */
        Py_XDECREF(records);
        if (records_api == NULL)
            PyErr_Clear(); /* not built: appends go through the method */
    }
    PyObject *mod = PyModule_Create(&module);
    if (mod == NULL)
        return NULL;
    Py_INCREF(&FastSend_Type);
    if (PyModule_AddObject(mod, "FastSend", (PyObject *)&FastSend_Type) < 0) {
        Py_DECREF(&FastSend_Type);
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
