/* The record accumulator's hot path in C: optional, every piece has a pure-Python twin.
 *
 * Interface (also in _cproducer.pyi); Python reaches C state only through these types' members
 * and methods, and C reaches Python objects only through their public attributes (and
 * SendMethod through the producer's ``_fast_append`` slot, the one it exists to call):
 *
 *   BatchCore      base type of _batch.ProducerBatch: the fields the hot path reads and writes
 *                  (topic, partition, builder, outcome, count, closed) as C struct members.
 *   HandleCore     base type of _batch.DeliveryHandle, outside the cyclic GC: _batch, the
 *                  record's index as a C integer and its timestamp (an int shared by the
 *                  records appended in the same millisecond).  Its __await__ answers a
 *                  delivered record here, waits for a pending one here too (on the future the
 *                  batch's ``add_waiter()`` gives, then the handle's ``result()`` if it
 *                  failed), and calls the subclass's ``_await_pending()`` for a failed one.
 *                  ``set_metadata_type(RecordMetadata)`` names the tuple type it builds.
 *   Appender       RecordAccumulator's common case of appending one record (Appender_append),
 *                  into the state the accumulator pushed (the "append hot path" section).
 *   SendMethod     Producer.send (wrapping the async def): a call returns a SendCall, a
 *                  coroutine that, awaited, calls the producer's ``_fast_append`` and else
 *                  delegates to the async def's coroutine (the "send calls" section).
 *
 * A subclass of BatchCore or HandleCore must declare ``__slots__`` (HandleCore's: empty).  Every
 * class statement makes a GC type, so handles are untracked as they are made (new_handle). */
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

static PyObject *str_append, *str_await_pending;
/* A pending handle's wait (HandleCore_await): the batch's and the handle's methods. */
static PyObject *str_add_waiter, *str_result;

/* The records accelerator's builder append as a C function (_crecords_api.h): called directly,
 * not as a method, when the builder is of the class it is registered for.  NULL when _crecords
 * is not built; the method call then does the same. */
static CRecordsApi *records_api;

/* ------------------------------------------------------------------ batches */

typedef struct {
    PyObject_HEAD
    PyObject *topic;
    PyObject *partition;
    PyObject *builder; /* the open RecordBatchBuilder; None once built */
    PyObject *outcome; /* (base_offset, log_append_time) once delivered, else None */
    Py_ssize_t count;  /* records appended */
    char closed;       /* drained at least once: no more appends */
} BatchCore;

static PyMemberDef BatchCore_members[] = {
    {"topic", T_OBJECT_EX, offsetof(BatchCore, topic), 0, NULL},
    {"partition", T_OBJECT_EX, offsetof(BatchCore, partition), 0, NULL},
    {"builder", T_OBJECT_EX, offsetof(BatchCore, builder), 0, NULL},
    {"outcome", T_OBJECT_EX, offsetof(BatchCore, outcome), 0, NULL},
    {"count", T_PYSSIZET, offsetof(BatchCore, count), 0, NULL},
    {"closed", T_BOOL, offsetof(BatchCore, closed), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

static int BatchCore_traverse(BatchCore *self, visitproc visit, void *arg)
{
    Py_VISIT(self->topic);
    Py_VISIT(self->partition);
    Py_VISIT(self->builder);
    Py_VISIT(self->outcome);
    return 0;
}

static int BatchCore_clear(BatchCore *self)
{
    Py_CLEAR(self->topic);
    Py_CLEAR(self->partition);
    Py_CLEAR(self->builder);
    Py_CLEAR(self->outcome);
    return 0;
}

static void BatchCore_dealloc(BatchCore *self)
{
    PyObject_GC_UnTrack(self);
    BatchCore_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject BatchCore_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "aiokafkawire.producer._cproducer.BatchCore",
    .tp_basicsize = sizeof(BatchCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The fields of a producer batch that the accumulator's hot path uses.",
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)BatchCore_dealloc,
    .tp_traverse = (traverseproc)BatchCore_traverse,
    .tp_clear = (inquiry)BatchCore_clear,
    .tp_members = BatchCore_members,
};

/* ------------------------------------------------------------------ delivery handles
 *
 * Not tracked by the cyclic garbage collector: a service holding 100,000 pending handles would
 * otherwise pay for them in every collection (about a tenth of the time of 1,000 concurrent
 * senders).  A handle points to its batch and never the other way, so it closes no cycle of its
 * own (a done-callback's closure on the batch's future may hold it until the future is done). */

typedef struct {
    PyObject_HEAD
    PyObject *batch;
    long long index;
    /* An exact int: it closes no cycle.  The appender hands the records of one millisecond
     * the same one, and a delivered handle's RecordMetadata shares it. */
    PyObject *timestamp;
} HandleCore;

static PyTypeObject *metadata_type; /* RecordMetadata, a tuple subclass */

static PyMemberDef HandleCore_members[] = {
    {"_batch", T_OBJECT_EX, offsetof(HandleCore, batch), READONLY, NULL},
    {"_index", T_LONGLONG, offsetof(HandleCore, index), READONLY, NULL},
    {"_timestamp", T_OBJECT_EX, offsetof(HandleCore, timestamp), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

/* Whether `type` (HandleCore or a subclass) adds nothing to HandleCore's layout: its instances
 * are then allocated by new_handle without zeroing and never tracked. */
static int plain_handle_type(PyTypeObject *type)
{
    return type->tp_basicsize == (Py_ssize_t)sizeof(HandleCore) && type->tp_itemsize == 0 &&
           type->tp_dictoffset == 0 && type->tp_weaklistoffset == 0 &&
           type->tp_alloc == PyType_GenericAlloc;
}

/* A handle of `type` (HandleCore or a subclass) for record `index` of `batch`, untracked. */
static PyObject *new_handle(PyTypeObject *type, PyObject *batch, long long index,
                            PyObject *timestamp)
{
    HandleCore *self;
    if (plain_handle_type(type)) {
        /* Every field is set below; a GC object made so is not tracked (PyType_GenericAlloc
         * would zero it and track it, only for us to untrack it). */
        self = PyType_IS_GC(type) ? PyObject_GC_New(HandleCore, type)
                                  : PyObject_New(HandleCore, type);
        if (self == NULL)
            return NULL;
    }
    else {
        self = (HandleCore *)type->tp_alloc(type, 0);
        if (self == NULL)
            return NULL;
        if (PyObject_IS_GC((PyObject *)self))
            PyObject_GC_UnTrack(self);
    }
    Py_INCREF(batch);
    self->batch = batch;
    self->index = index;
    Py_INCREF(timestamp);
    self->timestamp = timestamp;
    return (PyObject *)self;
}

static PyObject *HandleCore_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *batch, *timestamp;
    long long index;
    static char *kwlist[] = {"batch", "index", "timestamp", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!LO:DeliveryHandle", kwlist, &BatchCore_Type,
                                     &batch, &index, &timestamp))
        return NULL;
    /* An exact int (3.10+: not a subclass, which could hold references) in long long range. */
    PyObject *exact = PyNumber_Index(timestamp);
    if (exact == NULL)
        return NULL;
    int overflow;
    if (PyLong_AsLongLongAndOverflow(exact, &overflow) == -1 && PyErr_Occurred()) {
        Py_DECREF(exact);
        return NULL;
    }
    PyObject *handle = overflow ? NULL : new_handle(type, batch, index, exact);
    if (overflow)
        PyErr_SetString(PyExc_OverflowError, "timestamp out of range");
    Py_DECREF(exact);
    return handle;
}

static void HandleCore_dealloc(HandleCore *self)
{
    Py_CLEAR(self->batch);
    Py_CLEAR(self->timestamp);
    Py_TYPE(self)->tp_free((PyObject *)self);
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

/* A send result as an iterator's or a generator method's: the value yielded, or NULL with
 * StopIteration(value) set when it returned (NULL with the error set when it raised). */
static PyObject *iter_result(PySendResult status, PyObject *value)
{
    if (status != PYGEN_RETURN)
        return value;
    /* A tuple value must be wrapped, or StopIteration would take it as its arguments. */
    PyObject *stop = PyObject_CallOneArg(PyExc_StopIteration, value);
    Py_DECREF(value);
    if (stop != NULL) {
        PyErr_SetObject(PyExc_StopIteration, stop);
        Py_DECREF(stop);
    }
    return NULL;
}

static PyObject *Ready_next(Ready *self)
{
    PyObject *value;
    PySendResult status = Ready_send(self, Py_None, &value);
    return iter_result(status, value);
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
 * must answer (pending, failed, unusual numbers); NULL with one on errors. */
static PyObject *handle_metadata(HandleCore *self)
{
    BatchCore *batch = (BatchCore *)self->batch;
    if (batch == NULL || metadata_type == NULL)
        return NULL;
    PyObject *outcome = batch->outcome; /* (base_offset, log_append_time) or None */
    PyObject *topic = batch->topic, *partition = batch->partition;
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
        Py_INCREF(self->timestamp);
        timestamp = self->timestamp;
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

/* The iterator of an awaited pending handle: it waits on `inner`, the __await__ of a future of
 * this waiter's own in its batch's `waiters` (set when the batch is decided, see
 * _batch.ProducerBatch), then answers the handle's RecordMetadata or raises its error.  The
 * Python _await_pending() without its generator frame.  A waiter never waits on the batch's
 * future itself: cancelling the awaiting task cancels what the task waits on. */
typedef struct {
    PyObject_HEAD
    PyObject *handle;
    PyObject *inner; /* NULL once finished */
} Waiting;

static int Waiting_traverse(Waiting *self, visitproc visit, void *arg)
{
    Py_VISIT(self->handle);
    Py_VISIT(self->inner); /* task -> frame -> this -> future -> task's wake-up: a cycle */
    return 0;
}

static int Waiting_clear(Waiting *self)
{
    Py_CLEAR(self->handle);
    Py_CLEAR(self->inner);
    return 0;
}

static void Waiting_dealloc(Waiting *self)
{
    PyObject_GC_UnTrack(self);
    Waiting_clear(self);
    PyObject_GC_Del(self);
}

static PyObject *handle_metadata(HandleCore *self);

static PySendResult Waiting_send(Waiting *self, PyObject *arg, PyObject **result)
{
    if (self->inner == NULL) { /* resumed after it finished: like an exhausted generator */
        *result = NULL;
        PyErr_SetNone(PyExc_StopIteration);
        return PYGEN_ERROR;
    }
    PyObject *value;
    PySendResult status = PyIter_Send(self->inner, arg, &value);
    if (status != PYGEN_RETURN) {
        if (status == PYGEN_ERROR)
            Py_CLEAR(self->inner);
        *result = value;
        return status;
    }
    Py_DECREF(value);
    Py_CLEAR(self->inner);
    PyObject *metadata = self->handle ? handle_metadata((HandleCore *)self->handle) : NULL;
    if (metadata == NULL && !PyErr_Occurred() && self->handle != NULL)
        /* Failed or unusual: result() raises the delivery error or answers in Python. */
        metadata = PyObject_CallMethodNoArgs(self->handle, str_result);
    else if (metadata == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "the awaited delivery handle is gone");
    *result = metadata;
    return metadata == NULL ? PYGEN_ERROR : PYGEN_RETURN;
}

static PyObject *Waiting_next(Waiting *self)
{
    PyObject *value;
    PySendResult status = Waiting_send(self, Py_None, &value);
    return iter_result(status, value);
}

static PyAsyncMethods Waiting_async = {.am_send = (sendfunc)Waiting_send};

static PyTypeObject Waiting_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "aiokafkawire.producer._cproducer.Waiting",
    .tp_basicsize = sizeof(Waiting),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The iterator of an awaited, still pending record: waits on a future of its own.",
    .tp_dealloc = (destructor)Waiting_dealloc,
    .tp_traverse = (traverseproc)Waiting_traverse,
    .tp_clear = (inquiry)Waiting_clear,
    .tp_as_async = &Waiting_async,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)Waiting_next,
};

/* The __await__ iterator of a new waiter future of `batch` (its add_waiter method); NULL without
 * an exception when the batch is decided (it failed: a delivered one answered in C before) and
 * the Python method must answer. */
static PyObject *wait_inner(PyObject *batch)
{
    PyObject *waiter = PyObject_CallMethodNoArgs(batch, str_add_waiter);
    if (waiter == NULL || waiter == Py_None) {
        Py_XDECREF(waiter);
        return NULL;
    }
    PyTypeObject *type = Py_TYPE(waiter);
    PyObject *inner = type->tp_as_async && type->tp_as_async->am_await
                          ? type->tp_as_async->am_await(waiter)
                          : PyObject_CallMethod(waiter, "__await__", NULL);
    Py_DECREF(waiter);
    return inner;
}

/* One Ready is kept and reused while nobody else holds it: awaiting a delivered record then
 * allocates only its RecordMetadata (the await drops the iterator as soon as it returns). */
static Ready *spare_ready;

static PyObject *HandleCore_await(HandleCore *self)
{
    PyObject *metadata = handle_metadata(self);
    if (metadata == NULL) {
        if (PyErr_Occurred())
            return NULL;
        PyObject *inner = wait_inner(self->batch);
        if (inner != NULL) { /* pending: wait in C */
            Waiting *waiting = PyObject_GC_New(Waiting, &Waiting_Type);
            if (waiting == NULL) {
                Py_DECREF(inner);
                return NULL;
            }
            Py_INCREF(self);
            waiting->handle = (PyObject *)self;
            waiting->inner = inner;
            PyObject_GC_Track(waiting);
            return (PyObject *)waiting;
        }
        if (PyErr_Occurred())
            return NULL;
        /* Failed: the Python method raises the delivery error. */
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

static PyAsyncMethods HandleCore_async = {.am_await = (unaryfunc)HandleCore_await};

static PyTypeObject HandleCore_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "aiokafkawire.producer._cproducer.HandleCore",
    .tp_basicsize = sizeof(HandleCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, /* no Py_TPFLAGS_HAVE_GC: the point */
    .tp_doc = "The delivery of one record (base of DeliveryHandle); __await__ in C when "
              "delivered or pending, else (failed) the subclass's _await_pending().",
    .tp_new = HandleCore_new,
    .tp_dealloc = (destructor)HandleCore_dealloc,
    .tp_members = HandleCore_members,
    .tp_as_async = &HandleCore_async,
};

static PyObject *set_metadata_type(PyObject *module, PyObject *type)
{
    if (!PyType_Check(type) || !PyType_IsSubtype((PyTypeObject *)type, &PyTuple_Type) ||
        ((PyTypeObject *)type)->tp_basicsize != PyTuple_Type.tp_basicsize) {
        PyErr_SetString(PyExc_TypeError, "set_metadata_type(RecordMetadata: a tuple type)");
        return NULL;
    }
    Py_INCREF(type);
    Py_XSETREF(metadata_type, (PyTypeObject *)type);
    Py_RETURN_NONE;
}

/* Makes `type` (DeliveryHandle: a heap subclass of HandleCore adding nothing) a non-GC type.
 * A class statement always gives its instances a GC header, and allocating one counts toward
 * the cyclic GC's next collection even though new_handle never tracks it: 1,000 tasks keeping
 * 100 handles each (workload 6) then ran a collection every 700 records, which moved the
 * tasks' coroutines to the old generation and triggered a full collection (~18 ms with ~40,000
 * objects) about every 100,000 records.  Nothing changes for the GC's view: a handle refers to
 * its batch and an exact int only and was never tracked.  Called once, before any instance
 * exists (_batch.py, right after the class statement). */
static PyObject *handles_outside_gc(PyObject *module, PyObject *arg)
{
    PyTypeObject *type = (PyTypeObject *)arg;
    if (!PyType_Check(arg) || !PyType_IsSubtype(type, &HandleCore_Type) ||
        !(type->tp_flags & Py_TPFLAGS_HEAPTYPE) || !plain_handle_type(type)) {
        PyErr_SetString(PyExc_TypeError,
                        "handles_outside_gc(DeliveryHandle: a class adding nothing to HandleCore)");
        return NULL;
    }
    if (PyType_IS_GC(type)) {
        if (type->tp_free != PyObject_GC_Del) {
            PyErr_SetString(PyExc_TypeError, "handles_outside_gc: unexpected tp_free");
            return NULL;
        }
        type->tp_flags &= ~Py_TPFLAGS_HAVE_GC;
        type->tp_free = PyObject_Free;
        PyType_Modified(type);
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ the append hot path
 *
 * The accumulator (Python) owns every piece of state; it *pushes* into an Appender what the fast
 * path may use, one Lane per topic, and takes it back when it stops being true:
 *
 *   add_topic(topic, partitions)  a lane: the topic's partition count, no sticky partition, no
 *                                 open batch (replaces the topic's lane; metadata was read)
 *   set_sticky(topic, partition)  the partition of keyless records (None: the Python path asks
 *                                 the partitioner)
 *   set_open(batch)               the open batch of batch.partition (its BatchCore fields)
 *   forget()                      drop every lane (new metadata)
 *   enabled = False               decline everything (closed, fatal transaction error)
 *
 * Pushes for a topic without a lane are ignored.  append() reads nothing else: no attribute of a
 * Python object, only the lane and the C fields of the batch it was handed (a drained batch is
 * `closed`, a failed or built one has no builder: both decline). */

typedef struct {
    PyObject_VAR_HEAD  /* ob_size: the topic's partition count */
    PyObject *count;   /* the same as an int: the keyed partitioner's second argument */
    Py_ssize_t sticky; /* keyless records' partition; -1: none (the Python path chooses) */
    PyObject *open[1]; /* per partition: its open batch (a BatchCore), or NULL */
} Lane;

static int Lane_traverse(Lane *self, visitproc visit, void *arg)
{
    Py_VISIT(self->count);
    for (Py_ssize_t i = 0; i < Py_SIZE(self); i++)
        Py_VISIT(self->open[i]);
    return 0;
}

static int Lane_clear(Lane *self)
{
    Py_CLEAR(self->count);
    for (Py_ssize_t i = 0; i < Py_SIZE(self); i++)
        Py_CLEAR(self->open[i]);
    return 0;
}

static void Lane_dealloc(Lane *self)
{
    PyObject_GC_UnTrack(self);
    Lane_clear(self);
    PyObject_GC_Del(self);
}

static PyTypeObject Lane_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "aiokafkawire.producer._cproducer.Lane",
    .tp_basicsize = offsetof(Lane, open),
    .tp_itemsize = sizeof(PyObject *),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "What the accumulator pushed for one topic (internal to Appender).",
    .tp_dealloc = (destructor)Lane_dealloc,
    .tp_traverse = (traverseproc)Lane_traverse,
    .tp_clear = (inquiry)Lane_clear,
};

typedef struct {
    PyObject_HEAD
    PyObject *lanes;           /* topic -> Lane: only what the accumulator pushed */
    PyObject *keyed;           /* partition_for_key(key, count) */
    PyObject *clock;           /* time.time */
    PyTypeObject *handle_type; /* DeliveryHandle: a HandleCore subclass */
    char enabled;              /* False: every call declines (the owner's checks are needed) */
    int direct_clock;          /* clock is time.time: read the system clock here */
    Py_ssize_t max_record_size;
    Py_ssize_t overhead;
    /* The last record's timestamp, for the next records of the same millisecond. */
    PyObject *last_timestamp;
    long long last_timestamp_ms;
} Appender;

static PyMemberDef Appender_members[] = {
    {"enabled", T_BOOL, offsetof(Appender, enabled), 0,
     "False: append() declines every record (the owner's Python checks are needed)."},
    {NULL, 0, 0, 0, NULL},
};

#define SET_REF(field, value) \
    do { \
        Py_INCREF(value); \
        Py_XSETREF(self->field, value); \
    } while (0)

static int Appender_init(Appender *self, PyObject *args, PyObject *kwds)
{
    PyObject *keyed, *clock, *handle_type;
    Py_ssize_t max_record_size, overhead;
    static char *kwlist[] = {"keyed", "clock", "handle_type", "max_record_size", "overhead", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO!nn:Appender", kwlist, &keyed, &clock,
                                     &PyType_Type, &handle_type, &max_record_size, &overhead))
        return -1;
    if (!PyCallable_Check(keyed) || !PyCallable_Check(clock)) {
        PyErr_SetString(PyExc_TypeError, "keyed and clock must be callable");
        return -1;
    }
    if (!PyType_IsSubtype((PyTypeObject *)handle_type, &HandleCore_Type)) {
        PyErr_SetString(PyExc_TypeError, "handle_type must be a HandleCore subclass");
        return -1;
    }
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
    PyObject *lanes = PyDict_New();
    if (lanes == NULL)
        return -1;
    Py_XSETREF(self->lanes, lanes);
    self->direct_clock = direct_clock;
    self->enabled = 1;
    self->max_record_size = max_record_size;
    self->overhead = overhead;
    SET_REF(keyed, keyed);
    SET_REF(clock, clock);
    SET_REF(handle_type, (PyTypeObject *)handle_type);
    return 0;
}

static int Appender_traverse(Appender *self, visitproc visit, void *arg)
{
    Py_VISIT(self->lanes);
    Py_VISIT(self->keyed);
    Py_VISIT(self->clock);
    Py_VISIT(self->handle_type);
    return 0;
}

static int Appender_clear(Appender *self)
{
    Py_CLEAR(self->lanes);
    Py_CLEAR(self->keyed);
    Py_CLEAR(self->clock);
    Py_CLEAR(self->handle_type);
    Py_CLEAR(self->last_timestamp);
    return 0;
}

static void Appender_dealloc(Appender *self)
{
    PyObject_GC_UnTrack(self);
    Appender_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int check_initialized(Appender *self)
{
    if (self->lanes == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Appender is not initialized");
        return -1;
    }
    return 0;
}

/* The lane of `topic` (borrowed), NULL without an exception if there is none. */
static Lane *lane_of(Appender *self, PyObject *topic)
{
    if (!PyUnicode_CheckExact(topic))
        return NULL;
    return (Lane *)PyDict_GetItemWithError(self->lanes, topic);
}

/* `partition` as an index of `lane`: -1 if it is not a plain int in 0..count-1 (no exception). */
static Py_ssize_t lane_index(Lane *lane, PyObject *partition)
{
    if (!PyLong_CheckExact(partition))
        return -1;
    Py_ssize_t index = PyLong_AsSsize_t(partition);
    if (index == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    return index >= 0 && index < Py_SIZE(lane) ? index : -1;
}

static PyObject *Appender_add_topic(Appender *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_initialized(self) < 0)
        return NULL;
    if (nargs != 2 || !PyUnicode_CheckExact(args[0]) || !PyLong_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "add_topic(topic: str, partitions: int)");
        return NULL;
    }
    Py_ssize_t count = PyLong_AsSsize_t(args[1]);
    if (count == -1 && PyErr_Occurred())
        return NULL;
    if (count < 0 || count > 1 << 20) {
        PyErr_SetString(PyExc_ValueError, "add_topic: partitions out of range");
        return NULL;
    }
    Lane *lane = PyObject_GC_NewVar(Lane, &Lane_Type, count);
    if (lane == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < count; i++)
        lane->open[i] = NULL;
    Py_INCREF(args[1]);
    lane->count = args[1];
    lane->sticky = -1;
    PyObject_GC_Track(lane);
    int failed = PyDict_SetItem(self->lanes, args[0], (PyObject *)lane);
    Py_DECREF(lane);
    return failed ? NULL : Py_NewRef(Py_None);
}

static PyObject *Appender_set_sticky(Appender *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_initialized(self) < 0)
        return NULL;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "set_sticky(topic, partition: int | None)");
        return NULL;
    }
    Lane *lane = lane_of(self, args[0]);
    if (lane != NULL)
        lane->sticky = lane_index(lane, args[1]); /* None or out of range: none */
    return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
}

static PyObject *Appender_set_open(Appender *self, PyObject *batch)
{
    if (check_initialized(self) < 0)
        return NULL;
    if (!PyObject_TypeCheck(batch, &BatchCore_Type)) {
        PyErr_SetString(PyExc_TypeError, "set_open(batch: a BatchCore)");
        return NULL;
    }
    BatchCore *core = (BatchCore *)batch;
    if (core->topic == NULL || core->partition == NULL)
        Py_RETURN_NONE;
    Lane *lane = lane_of(self, core->topic);
    if (lane == NULL)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    Py_ssize_t index = lane_index(lane, core->partition);
    if (index >= 0) {
        Py_INCREF(batch);
        Py_XSETREF(lane->open[index], batch);
    }
    Py_RETURN_NONE;
}

static PyObject *Appender_forget(Appender *self, PyObject *unused)
{
    if (check_initialized(self) < 0)
        return NULL;
    PyDict_Clear(self->lanes);
    Py_RETURN_NONE;
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

/* Whether the record is the plain case: 1 yes, 0 no (decline).  Sets *size. */
static int plain_record(Appender *self, PyObject *const *args, Py_ssize_t *size)
{
    PyObject *value = args[1], *key = args[2];
    if (!self->enabled || args[3] != Py_None || args[4] != Py_None || args[5] != Py_None)
        return 0; /* owner's checks on, or an explicit partition, timestamp or headers */
    if ((key != Py_None && !PyBytes_CheckExact(key)) ||
        (value != Py_None && !PyBytes_CheckExact(value)))
        return 0;
    *size = self->overhead + (key != Py_None ? PyBytes_GET_SIZE(key) : 0) +
            (value != Py_None ? PyBytes_GET_SIZE(value) : 0);
    return *size <= self->max_record_size;
}

/* The open batch the record goes to (new reference), from its topic's lane: the keyed
 * partitioner's choice or the sticky partition.  NULL without an exception to decline. */
static BatchCore *open_batch(Appender *self, PyObject *topic, PyObject *key)
{
    Lane *lane = lane_of(self, topic);
    if (lane == NULL || Py_SIZE(lane) == 0)
        return NULL;
    Py_ssize_t index;
    if (key != Py_None) {
        PyObject *call_args[2] = {key, lane->count};
        Py_INCREF(lane); /* the partitioner could push (and drop the lane) */
        PyObject *partition = PyObject_Vectorcall(self->keyed, call_args, 2, NULL);
        if (partition == NULL) {
            Py_DECREF(lane);
            return NULL;
        }
        index = lane_index(lane, partition);
        Py_DECREF(partition);
        if (index < 0) {
            Py_DECREF(lane);
            return NULL;
        }
        BatchCore *batch = (BatchCore *)lane->open[index];
        Py_XINCREF(batch);
        Py_DECREF(lane);
        if (batch == NULL)
            return NULL;
        if (batch->closed || batch->builder == NULL || batch->builder == Py_None) {
            Py_DECREF(batch);
            return NULL;
        }
        return batch;
    }
    index = lane->sticky;
    if (index < 0)
        return NULL; /* none yet: the partitioner chooses one, in Python */
    BatchCore *batch = (BatchCore *)lane->open[index];
    if (batch == NULL || batch->closed || batch->builder == NULL || batch->builder == Py_None)
        return NULL;
    Py_INCREF(batch);
    return batch;
}

/* time.time() * 1000 truncated to an integer; 0 with *ms set, 1 to decline, -1 on error. */
static int wall_clock_ms(Appender *self, long long *ms)
{
    double now_s;
#if HAVE_DIRECT_CLOCK
    if (self->direct_clock)
        now_s = wall_clock_seconds();
    else
#endif
    {
        PyObject *now = PyObject_CallNoArgs(self->clock);
        if (now == NULL)
            return -1;
        now_s = PyFloat_AsDouble(now);
        Py_DECREF(now);
    }
    if (now_s == -1.0 && PyErr_Occurred())
        return -1;
    double now_ms = now_s * 1000.0;
    /* A clock outside int64 milliseconds (or not a number) is left to the Python path. */
    if (!(now_ms > -9.2e18 && now_ms < 9.2e18))
        return 1;
    *ms = (long long)now_ms;
    return 0;
}

/* builder.append(timestamp, key, value, None): 1 appended, 0 full, -1 error. */
static int builder_append(PyObject *builder, PyObject *timestamp, PyObject *key, PyObject *value)
{
    PyObject *append_args[5] = {builder, timestamp, key, value, Py_None};
    PyObject *appended;
    if (records_api != NULL && *records_api->builder_type != NULL &&
        Py_TYPE(builder) == *records_api->builder_type)
        appended = records_api->builder_append(NULL, append_args, 5, NULL);
    else
        appended = PyObject_VectorcallMethod(str_append, append_args,
                                             5 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    if (appended == NULL)
        return -1;
    int truth = PyObject_IsTrue(appended);
    Py_DECREF(appended);
    return truth;
}

/* append(topic, value, key, partition, timestamp, headers) -> DeliveryHandle | None
 *
 * Appends a plain record (bytes or None key and value; no explicit partition, timestamp or
 * headers; default partitioner) to the open batch its topic's lane names for the partition,
 * exactly as the accumulator's Python path would.  Anything else (disabled, no lane, no sticky
 * partition, an oversized record, no open batch, a closed or full one, ...) returns None *before
 * any side effect*, and the Python path, complete and authoritative, takes the record. */
static PyObject *Appender_append(Appender *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError,
                        "append(topic, value, key, partition, timestamp, headers)");
        return NULL;
    }
    if (check_initialized(self) < 0)
        return NULL;
    Py_ssize_t size;
    if (!plain_record(self, args, &size))
        Py_RETURN_NONE;
    PyObject *topic = args[0], *value = args[1], *key = args[2];
    BatchCore *batch = open_batch(self, topic, key);
    if (batch == NULL)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    PyObject *result = NULL;
    long long timestamp_ms;
    int clock = wall_clock_ms(self, &timestamp_ms);
    if (clock != 0) {
        result = clock < 0 ? NULL : Py_NewRef(Py_None);
        goto done;
    }
    PyObject *timestamp = self->last_timestamp;
    if (timestamp == NULL || self->last_timestamp_ms != timestamp_ms) {
        timestamp = PyLong_FromLongLong(timestamp_ms);
        if (timestamp == NULL)
            goto done;
        Py_XSETREF(self->last_timestamp, timestamp);
        self->last_timestamp_ms = timestamp_ms;
    }
    Py_INCREF(timestamp); /* the builder's append could run Python code (the pure one) */
    int appended = builder_append(batch->builder, timestamp, key, value);
    if (appended <= 0) { /* full: nothing was appended; the Python path opens the next batch */
        Py_DECREF(timestamp);
        result = appended < 0 ? NULL : Py_NewRef(Py_None);
        goto done;
    }
    result = new_handle(self->handle_type, (PyObject *)batch, batch->count, timestamp);
    Py_DECREF(timestamp);
    if (result != NULL)
        batch->count++;
done:
    Py_DECREF(batch);
    return result;
}

static PyMethodDef Appender_methods[] = {
    {"append", (PyCFunction)(void (*)(void))Appender_append, METH_FASTCALL,
     "append(topic, value, key, partition, timestamp, headers) -> DeliveryHandle, or None "
     "when the accumulator's Python path must take the record."},
    {"add_topic", (PyCFunction)(void (*)(void))Appender_add_topic, METH_FASTCALL,
     "add_topic(topic, partitions): a lane for topic (no sticky partition, no open batch)."},
    {"set_sticky", (PyCFunction)(void (*)(void))Appender_set_sticky, METH_FASTCALL,
     "set_sticky(topic, partition | None): the partition of topic's keyless records."},
    {"set_open", (PyCFunction)Appender_set_open, METH_O,
     "set_open(batch): the open batch of batch's partition."},
    {"forget", (PyCFunction)Appender_forget, METH_NOARGS, "forget(): drop every lane."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject Appender_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "aiokafkawire.producer._cproducer.Appender",
    .tp_basicsize = sizeof(Appender),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The accumulator's common case of appending a record (see append).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Appender_init,
    .tp_dealloc = (destructor)Appender_dealloc,
    .tp_traverse = (traverseproc)Appender_traverse,
    .tp_clear = (inquiry)Appender_clear,
    .tp_methods = Appender_methods,
    .tp_members = Appender_members,
};

/* ------------------------------------------------------------------ send calls
 *
 * ``Producer.send`` is an ``async def``: every call makes a coroutine (a frame, its locals, the
 * keyword-only defaults looked up) only to call the Appender and return a handle.  SendMethod
 * wraps that function (``_cproducer.SendMethod(Producer.send)`` replaces it on the class): a
 * call with the usual argument shapes returns a SendCall, a coroutine of its own which, once
 * awaited (lazily, as a coroutine: nothing happens before), calls the instance's
 * ``_fast_append`` (None or Appender.append: a handle, or None to decline) and, if it declines,
 * the wrapped function's coroutine, and delegates to it.  Any other call shape goes to the
 * wrapped function itself.  Everything else (``__code__``, ``__doc__``, signature, ...) is the
 * wrapped function's, so ``inspect.iscoroutinefunction(producer.send)`` stays true. */

enum { SEND_ARGS = 7 }; /* self, topic, value, key, partition, timestamp, headers */

static PyObject *send_names[SEND_ARGS]; /* interned parameter names; [0] unused */
static PyObject *str_fast_append, *str_throw, *str_close, *send_kwnames;

typedef struct {
    PyObject_HEAD
    PyObject *func; /* the wrapped coroutine function */
    vectorcallfunc vectorcall;
} SendMethod;

typedef struct {
    PyObject_HEAD
    PyObject *func;
    PyObject *args[SEND_ARGS]; /* NULL once started */
    PyObject *inner;           /* the wrapped function's coroutine, once it took the record */
    char state;                /* SEND_NEW, SEND_DELEGATING or SEND_DONE */
} SendCall;

enum { SEND_NEW, SEND_DELEGATING, SEND_DONE };

static PyTypeObject SendCall_Type;

static void send_call_drop_args(SendCall *self)
{
    for (int i = 0; i < SEND_ARGS; i++)
        Py_CLEAR(self->args[i]);
}

static int SendCall_traverse(SendCall *self, visitproc visit, void *arg)
{
    Py_VISIT(self->func);
    for (int i = 0; i < SEND_ARGS; i++)
        Py_VISIT(self->args[i]);
    Py_VISIT(self->inner);
    return 0;
}

static int SendCall_clear(SendCall *self)
{
    Py_CLEAR(self->func);
    send_call_drop_args(self);
    Py_CLEAR(self->inner);
    return 0;
}

static void SendCall_dealloc(SendCall *self)
{
    PyObject_GC_UnTrack(self);
    if (self->state == SEND_NEW && self->args[0] != NULL) {
        /* As a native coroutine: a send that is never awaited sends nothing; say so. */
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        if (PyErr_WarnEx(PyExc_RuntimeWarning, "coroutine 'Producer.send' was never awaited",
                         1) < 0)
            PyErr_WriteUnraisable(NULL);
        PyErr_Restore(type, value, traceback);
    }
    SendCall_clear(self);
    PyObject_GC_Del(self);
}

/* The first step: the fast path's handle (PYGEN_RETURN), or the wrapped function's coroutine
 * in self->inner (PYGEN_NEXT, nothing yielded yet), or an error. */
static PySendResult send_call_start(SendCall *self, PyObject **result)
{
    PyObject **args = self->args;
    self->state = SEND_DONE;
    PyObject *fast = PyObject_GetAttr(args[0], str_fast_append);
    if (fast == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            send_call_drop_args(self);
            *result = NULL;
            return PYGEN_ERROR;
        }
        PyErr_Clear(); /* not a Producer: the wrapped function answers */
    }
    if (fast != NULL && fast != Py_None) {
        PyObject *handle = PyObject_Vectorcall(fast, args + 1, SEND_ARGS - 1, NULL);
        Py_DECREF(fast);
        if (handle == NULL || handle != Py_None) {
            send_call_drop_args(self);
            *result = handle;
            return handle == NULL ? PYGEN_ERROR : PYGEN_RETURN;
        }
        Py_DECREF(handle);
    }
    else
        Py_XDECREF(fast);
    /* Declined: the wrapped coroutine takes the record (and tries the fast path again). */
    PyObject *inner = PyObject_Vectorcall(self->func, args, 4, send_kwnames);
    send_call_drop_args(self);
    if (inner == NULL) {
        *result = NULL;
        return PYGEN_ERROR;
    }
    self->inner = inner;
    self->state = SEND_DELEGATING;
    *result = NULL;
    return PYGEN_NEXT;
}

static PySendResult SendCall_send(SendCall *self, PyObject *arg, PyObject **result)
{
    if (self->state == SEND_NEW) {
        if (arg != Py_None) {
            PyErr_SetString(PyExc_TypeError,
                            "can't send non-None value to a just-started coroutine");
            *result = NULL;
            return PYGEN_ERROR;
        }
        PySendResult status = send_call_start(self, result);
        if (status != PYGEN_NEXT)
            return status;
    }
    if (self->state != SEND_DELEGATING) {
        PyErr_SetString(PyExc_RuntimeError, "cannot reuse already awaited coroutine");
        *result = NULL;
        return PYGEN_ERROR;
    }
    PySendResult status = PyIter_Send(self->inner, arg, result);
    if (status != PYGEN_NEXT) {
        self->state = SEND_DONE;
        Py_CLEAR(self->inner);
    }
    return status;
}

static PyObject *SendCall_next(SendCall *self)
{
    PyObject *value;
    PySendResult status = SendCall_send(self, Py_None, &value);
    return iter_result(status, value);
}

static PyObject *SendCall_send_method(SendCall *self, PyObject *arg)
{
    PyObject *value;
    PySendResult status = SendCall_send(self, arg, &value);
    return iter_result(status, value);
}

static PyObject *SendCall_throw(SendCall *self, PyObject *args)
{
    if (self->state == SEND_DELEGATING) {
        PyObject *throw = PyObject_GetAttr(self->inner, str_throw);
        PyObject *yielded = throw ? PyObject_Call(throw, args, NULL) : NULL;
        Py_XDECREF(throw);
        if (yielded == NULL) { /* returned (StopIteration) or raised: finished either way */
            self->state = SEND_DONE;
            Py_CLEAR(self->inner);
        }
        return yielded;
    }
    /* Not started (or finished): raise it here, as a coroutine does; it then is finished. */
    self->state = SEND_DONE;
    send_call_drop_args(self);
    PyObject *type, *value = NULL, *traceback = NULL;
    if (!PyArg_UnpackTuple(args, "throw", 1, 3, &type, &value, &traceback))
        return NULL;
    if (PyExceptionInstance_Check(type))
        PyErr_SetObject((PyObject *)Py_TYPE(type), type);
    else if (PyExceptionClass_Check(type))
        PyErr_SetObject(type, value);
    else
        PyErr_SetString(PyExc_TypeError, "exceptions must derive from BaseException");
    return NULL;
}

static PyObject *SendCall_close(SendCall *self, PyObject *unused)
{
    PyObject *inner = self->inner;
    self->inner = NULL;
    self->state = SEND_DONE;
    send_call_drop_args(self);
    if (inner == NULL)
        Py_RETURN_NONE;
    PyObject *closed = PyObject_CallMethodNoArgs(inner, str_close);
    Py_DECREF(inner);
    return closed;
}

static PyObject *SendCall_name(SendCall *self, void *qualified)
{
    return PyUnicode_FromString(qualified ? "Producer.send" : "send");
}

static PyGetSetDef SendCall_getset[] = {
    {"__name__", (getter)SendCall_name, NULL, NULL, NULL},
    {"__qualname__", (getter)SendCall_name, NULL, NULL, (void *)1},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef SendCall_methods[] = {
    {"send", (PyCFunction)SendCall_send_method, METH_O, "send(value): as a coroutine's."},
    {"throw", (PyCFunction)SendCall_throw, METH_VARARGS, "throw(exception): as a coroutine's."},
    {"close", (PyCFunction)SendCall_close, METH_NOARGS, "close(): as a coroutine's."},
    {NULL, NULL, 0, NULL},
};

static PyObject *SendCall_await(SendCall *self)
{
    return Py_NewRef(self);
}

static PyAsyncMethods SendCall_async = {
    .am_await = (unaryfunc)SendCall_await,
    .am_send = (sendfunc)SendCall_send,
};

static PyTypeObject SendCall_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "aiokafkawire.producer._cproducer.SendCall",
    .tp_basicsize = sizeof(SendCall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A call of Producer.send: a coroutine (send, throw, close, __await__).",
    .tp_dealloc = (destructor)SendCall_dealloc,
    .tp_traverse = (traverseproc)SendCall_traverse,
    .tp_clear = (inquiry)SendCall_clear,
    .tp_as_async = &SendCall_async,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)SendCall_next,
    .tp_methods = SendCall_methods,
    .tp_getset = SendCall_getset,
};

/* send(self, topic, value=None, key=None, *, partition=None, timestamp=None, headers=None):
 * a SendCall, or for any other argument shape (or names not interned) the wrapped function's
 * own coroutine or TypeError. */
static PyObject *SendMethod_vectorcall(SendMethod *self, PyObject *const *args, size_t nargsf,
                                       PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *slots[SEND_ARGS] = {NULL};
    if (nargs < 1 || nargs > 4)
        goto wrapped;
    for (Py_ssize_t i = 0; i < nargs; i++)
        slots[i] = args[i];
    Py_ssize_t keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < keywords; k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k);
        int slot = 1;
        while (slot < SEND_ARGS && send_names[slot] != name)
            slot++;
        if (slot == SEND_ARGS || slots[slot] != NULL)
            goto wrapped; /* unknown, repeated or not interned: the function's own error */
        slots[slot] = args[nargs + k];
    }
    if (slots[1] == NULL)
        goto wrapped; /* no topic */
    SendCall *call = PyObject_GC_New(SendCall, &SendCall_Type);
    if (call == NULL)
        return NULL;
    call->func = Py_NewRef(self->func);
    for (int i = 0; i < SEND_ARGS; i++)
        call->args[i] = Py_NewRef(slots[i] ? slots[i] : Py_None);
    call->inner = NULL;
    call->state = SEND_NEW;
    PyObject_GC_Track(call);
    return (PyObject *)call;
wrapped:
    return PyObject_Vectorcall(self->func, args, nargsf, kwnames);
}

static PyObject *SendMethod_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *func;
    if (!PyArg_ParseTuple(args, "O:SendMethod", &func))
        return NULL;
    if (!PyFunction_Check(func)) {
        PyErr_SetString(PyExc_TypeError, "SendMethod(function): Producer.send");
        return NULL;
    }
    SendMethod *self = (SendMethod *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->func = Py_NewRef(func);
    self->vectorcall = (vectorcallfunc)SendMethod_vectorcall;
    return (PyObject *)self;
}

static int SendMethod_traverse(SendMethod *self, visitproc visit, void *arg)
{
    Py_VISIT(self->func);
    return 0;
}

static int SendMethod_clear(SendMethod *self)
{
    Py_CLEAR(self->func);
    return 0;
}

static void SendMethod_dealloc(SendMethod *self)
{
    PyObject_GC_UnTrack(self);
    SendMethod_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *SendMethod_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj); /* as a function: bound, calls us with obj first */
}

/* The wrapped function's attributes (__name__, __code__, __defaults__, __wrapped__...). */
static PyObject *SendMethod_getattro(SendMethod *self, PyObject *name)
{
    PyObject *found = PyObject_GenericGetAttr((PyObject *)self, name);
    if (found != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError) || self->func == NULL)
        return found;
    PyErr_Clear();
    return PyObject_GetAttr(self->func, name);
}

static PyObject *SendMethod_doc(SendMethod *self, void *unused)
{
    return PyObject_GetAttrString(self->func, "__doc__");
}

static PyMemberDef SendMethod_members[] = {
    /* inspect.unwrap() (getsource, signature) reaches the async def itself. */
    {"__wrapped__", T_OBJECT_EX, offsetof(SendMethod, func), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyObject *SendMethod_repr(SendMethod *self)
{
    return PyObject_Repr(self->func);
}

static PyGetSetDef SendMethod_getset[] = {
    {"__doc__", (getter)SendMethod_doc, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SendMethod_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "aiokafkawire.producer._cproducer.SendMethod",
    .tp_basicsize = sizeof(SendMethod),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_METHOD_DESCRIPTOR |
                Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(SendMethod, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = SendMethod_new,
    .tp_dealloc = (destructor)SendMethod_dealloc,
    .tp_traverse = (traverseproc)SendMethod_traverse,
    .tp_clear = (inquiry)SendMethod_clear,
    .tp_descr_get = SendMethod_get,
    .tp_getattro = (getattrofunc)SendMethod_getattro,
    .tp_repr = (reprfunc)SendMethod_repr,
    .tp_members = SendMethod_members,
    .tp_getset = SendMethod_getset,
};

/* ------------------------------------------------------------------ module */

static PyMethodDef module_methods[] = {
    {"set_metadata_type", (PyCFunction)set_metadata_type, METH_O,
     "set_metadata_type(RecordMetadata): the tuple type a delivered handle's __await__ builds."},
    {"handles_outside_gc", (PyCFunction)handles_outside_gc, METH_O,
     "handles_outside_gc(DeliveryHandle): its instances without a GC header (before any exists)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "aiokafkawire.producer._cproducer",
    "The record accumulator's hot path in C.", -1, module_methods,
};

static int add_type(PyObject *mod, const char *name, PyTypeObject *type)
{
    if (PyType_Ready(type) < 0)
        return -1;
    Py_INCREF(type);
    if (PyModule_AddObject(mod, name, (PyObject *)type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}

static int load_records_api(void)
{
    /* PyCapsule_Import would only import "aiokafkawire" and then look up attributes. */
    PyObject *records = PyImport_ImportModule(CRECORDS_MODULE);
    PyObject *capsule = records ? PyObject_GetAttrString(records, CRECORDS_API_ATTRIBUTE) : NULL;
    records_api = capsule ? PyCapsule_GetPointer(capsule, CRECORDS_API_CAPSULE) : NULL;
    Py_XDECREF(capsule); /* the module keeps it, and the module stays imported */
    Py_XDECREF(records);
    if (records_api == NULL)
        PyErr_Clear(); /* not built: appends go through the method */
    return 0;
}

PyMODINIT_FUNC PyInit__cproducer(void)
{
    if (str_append == NULL) {
        if ((str_append = PyUnicode_InternFromString("append")) == NULL ||
            (str_await_pending = PyUnicode_InternFromString("_await_pending")) == NULL ||
            (str_add_waiter = PyUnicode_InternFromString("add_waiter")) == NULL ||
            (str_result = PyUnicode_InternFromString("result")) == NULL ||
            (str_fast_append = PyUnicode_InternFromString("_fast_append")) == NULL ||
            (str_throw = PyUnicode_InternFromString("throw")) == NULL ||
            (str_close = PyUnicode_InternFromString("close")) == NULL)
            return NULL;
        static const char *names[SEND_ARGS] = {"self", "topic", "value", "key",
                                               "partition", "timestamp", "headers"};
        for (int i = 0; i < SEND_ARGS; i++)
            if ((send_names[i] = PyUnicode_InternFromString(names[i])) == NULL)
                return NULL;
        send_kwnames = PyTuple_Pack(3, send_names[4], send_names[5], send_names[6]);
        if (send_kwnames == NULL)
            return NULL;
    }
    if (PyType_Ready(&Ready_Type) < 0 || PyType_Ready(&Waiting_Type) < 0 || PyType_Ready(&Lane_Type) < 0 ||
        PyType_Ready(&SendCall_Type) < 0 || (records_api == NULL && load_records_api() < 0))
        return NULL;
    PyObject *mod = PyModule_Create(&module);
    if (mod == NULL)
        return NULL;
    if (add_type(mod, "BatchCore", &BatchCore_Type) < 0 ||
        add_type(mod, "HandleCore", &HandleCore_Type) < 0 ||
        add_type(mod, "Appender", &Appender_Type) < 0 ||
        add_type(mod, "SendMethod", &SendMethod_Type) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
