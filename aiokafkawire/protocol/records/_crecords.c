/*
 * Compiled helpers for record batch v2 (magic 2): the per-record loops of the consumer and
 * producer hot paths.  Everything around them (batch headers, CRCs, compression, builder state)
 * stays in Python, in aiokafkawire/protocol/records/_accel.py.
 *
 *   decode_records(buf, pos, end, count, base_offset, base_timestamp, timestamp_type,
 *                  log_append_time, record_cls) -> list | None
 *       Same contract as _pure_v2._decode_records.  Every read is bounds-checked against the
 *       record (or batch) it belongs to; malformed input raises CorruptRecordError (or
 *       UnicodeDecodeError for a header key, which the caller wraps as the pure path does).
 *       Returns None for the rare well-formed input whose numbers do not fit 64-bit arithmetic
 *       (varints longer than 64 bits, offset/timestamp sums overflowing int64): the caller then
 *       decodes that batch with the pure path, which has Python's unbounded ints.
 *
 *   decode_consumer_records(buf, pos, end, count, base_offset, base_timestamp, log_append_time,
 *                           record_cls, topic, partition, timestamp_type, leader_epoch,
 *                           min_offset, key_deserializer, value_deserializer) -> list | None
 *       The same decoding, building the consumer's record tuples directly (the contract of
 *       _pure_v2.RecordBatch.consumer_records).  Records holding only atomic objects are left
 *       untracked by the cyclic collector, as it untracks plain tuples itself: a NamedTuple
 *       subclass is never untracked by CPython, and millions of buffered records would
 *       otherwise be walked by every collection.
 *
 *   decode_share_records(buf, pos, end, count, base_offset, base_timestamp, log_append_time,
 *                        record_cls, topic, partition, timestamp_type, leader_epoch,
 *                        min_offset, max_offset, delivery_count) -> list | None
 *       The same, for the share consumer: only offsets min_offset..max_offset (an acquired
 *       range), each record with one more field, the range's delivery count; keys and values
 *       raw (_pure_v2.RecordBatch.share_records).
 *
 *   share_ack_held(acquired_by_tp, pending_by_tp, record, ack_type, clock) -> bool
 *       Not a record loop: the common case of a share consumer's explicit acknowledgement
 *       (consumer/share/acknowledgements.py, pure twin _ack_held), False for anything else.
 *
 *   ShareAckMethod(function, accept, acks_class): a type; consumer/share/consumer.py makes it
 *       ShareConsumer.acknowledge (wrapping the Python method): an ACCEPT of a held record on
 *       an open explicit-mode consumer settles in C (share_ack_held's work, no Python frame),
 *       anything else calls the Python method.
 *
 *   encode_record(buffer, offset_delta, timestamp_delta, key, value, headers, batch_size)
 *       -> bool | None
 *       Appends one record (length-prefixed) to the bytearray ``buffer``, or returns False when
 *       it would not fit ``batch_size`` (unless it is the first record, offset_delta == 0).
 *       Returns None, touching nothing, for any argument outside the fast path (keys/values
 *       that are not bytes/bytearray/None, headers that are not a list/tuple of
 *       (str, bytes | None) pairs, numbers outside int64): the caller then uses the pure path,
 *       so behaviour (and errors) stay exactly the pure path's.
 *
 *   reclaim_buffer(buffer, length) -> bool, move_into_buffer(source, target) -> bool
 *       Reuse of batch buffers (the producer's spares): a done batch's bytearray set to
 *       ``length`` zero bytes with its allocation kept, if nothing exports it; the bytes of a
 *       growing batch moved into such a buffer.  Appends then grow into the capacity in place.
 *
 *   builder_append(self, timestamp_ms, key, value, headers=None) -> bool
 *       An instancemethod: _accel.py makes it DefaultRecordBatchBuilder.append.  It reads the
 *       builder's slots (_built, _count, _base_timestamp, _max_timestamp, _buffer, _batch_size),
 *       appends with the same code as encode_record and updates the slots in place.  Anything
 *       unusual (built batch, timestamps that are not plain ints, keyword arguments, input
 *       outside encode_record's fast path) goes to the pure method, with the same arguments.
 *
 *   _api: a capsule ("aiokafkawire.protocol.records._crecords._api") holding a CRecordsApi
 *       (below): builder_append as a C function and the builder class it is registered for,
 *       so that the producer's C fast path appends without a Python method call.
 *
 *   _setup(record_cls, control_record_cls, corrupt_record_error) -> bool
 *   _setup_builder(builder_cls, pure_append, now_ms) -> bool
 *       Called once by _accel.py.  Records are allocated directly and their six __slots__
 *       filled in place when the class layout is exactly the expected one (returns True);
 *       otherwise records are made by calling the class (returns False).  Likewise
 *       builder_append is only used when the builder's slots are all found (returns True).
 *
 * Slots are located through the classes' PyMemberDef tables (tp_members), never guessed; a
 * class whose layout differs from the expected one gets the generic (pure) path.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "_crecords_api.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

#ifdef Py_T_OBJECT_EX
#define MEMBER_OBJECT_EX Py_T_OBJECT_EX
#else
#define MEMBER_OBJECT_EX T_OBJECT_EX
#endif

/* Minimum encoded record: length varint (1 byte) + length >= 6. */
#define MIN_RECORD_SIZE 7
/* Minimum encoded header: key length varint + value length varint. */
#define MIN_HEADER_SIZE 2

enum { F_OFFSET, F_TIMESTAMP, F_TIMESTAMP_TYPE, F_KEY, F_VALUE, F_HEADERS, N_FIELDS };

static const char *const field_names[N_FIELDS] = {
    "offset", "timestamp", "timestamp_type", "key", "value", "headers",
};

/* Set by _setup(); strong references kept for the life of the process. */
static PyObject *corrupt_error = NULL;
static PyTypeObject *record_type = NULL;
static PyTypeObject *control_type = NULL;
static Py_ssize_t field_offsets[N_FIELDS];
static int direct_alloc = 0;

/* ------------------------------------------------------------------------------------------ */
/* varints                                                                                      */

enum { VARINT_OK = 0, VARINT_WIDE = 1, VARINT_BAD = -1 };

/*
 * Read a zigzag varint from [*pp, limit).  Like primitives.read_varint: at most 10 bytes.
 * VARINT_BAD: runs past limit or is longer than 10 bytes.  VARINT_WIDE: well-formed but the
 * unsigned value needs more than 64 bits (*out is then meaningless).
 */
static inline int
read_varint(const unsigned char **pp, const unsigned char *limit, int64_t *out)
{
    const unsigned char *p = *pp;
    uint64_t u = 0;
    int status = VARINT_OK;
    unsigned int shift;

    if (p < limit && *p < 0x80) { /* one byte: the common case */
        u = *p;
        *pp = p + 1;
        *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
        return VARINT_OK;
    }
    for (shift = 0;; shift += 7) {
        unsigned int byte;
        if (p >= limit) {
            return VARINT_BAD;
        }
        byte = *p++;
        if (shift == 63) { /* tenth byte: one more bit fits in 64 */
            if (byte & 0x80) {
                return VARINT_BAD;
            }
            if (byte > 1) {
                status = VARINT_WIDE;
            }
            u |= (uint64_t)(byte & 1) << 63;
            break;
        }
        u |= (uint64_t)(byte & 0x7F) << shift;
        if (byte < 0x80) {
            break;
        }
    }
    *pp = p;
    *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return status;
}

static inline uint64_t
zigzag(int64_t value)
{
    return ((uint64_t)value << 1) ^ (uint64_t)(value < 0 ? -1 : 0);
}

static inline Py_ssize_t
varint_size(int64_t value)
{
    uint64_t u = zigzag(value);
    Py_ssize_t size = 1;
    while (u >= 0x80) {
        u >>= 7;
        size++;
    }
    return size;
}

static inline unsigned char *
write_varint(unsigned char *p, int64_t value)
{
    uint64_t u = zigzag(value);
    while (u >= 0x80) {
        *p++ = (unsigned char)((u & 0x7F) | 0x80);
        u >>= 7;
    }
    *p++ = (unsigned char)u;
    return p;
}

static inline int
add_overflows(int64_t a, int64_t b)
{
    return (b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b);
}

static inline int
sub_overflows(int64_t a, int64_t b)
{
    return (b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b);
}

/* ------------------------------------------------------------------------------------------ */
/* decoding                                                                                     */

static void
corrupt(const char *message)
{
    PyErr_SetString(corrupt_error, message);
}

/* Read a length-prefixed byte string (-1 = None) inside [*pp, limit); NULL on error. */
static PyObject *
read_nullable_bytes(const unsigned char **pp, const unsigned char *limit, const char *what)
{
    int64_t length;
    if (read_varint(pp, limit, &length) != VARINT_OK) {
        PyErr_Format(corrupt_error, "malformed record %s length", what);
        return NULL;
    }
    if (length == -1) {
        Py_RETURN_NONE;
    }
    if (length < 0) {
        PyErr_Format(corrupt_error, "invalid record %s length %lld", what, (long long)length);
        return NULL;
    }
    if (length > limit - *pp) {
        PyErr_Format(corrupt_error, "record %s overruns its record", what);
        return NULL;
    }
    {
        PyObject *result = PyBytes_FromStringAndSize((const char *)*pp, (Py_ssize_t)length);
        *pp += length;
        return result;
    }
}

/*
 * Decode a record's headers: a list of (str, bytes | None) pairs, or with ``as_tuple`` a tuple
 * of them (the empty tuple when there are none).  The pairs, and the tuple, hold only atomic
 * objects and are left untracked by the cyclic collector (as it would untrack them itself).
 */
static PyObject *
decode_headers(const unsigned char **pp, const unsigned char *limit, int as_tuple)
{
    int64_t count, key_len;
    Py_ssize_t i;
    PyObject *headers;

    if (read_varint(pp, limit, &count) != VARINT_OK) {
        corrupt("malformed record header count");
        return NULL;
    }
    if (count == 0) {
        return as_tuple ? PyTuple_New(0) : PyList_New(0);
    }
    if (count < 0) {
        PyErr_Format(corrupt_error, "invalid header count %lld", (long long)count);
        return NULL;
    }
    if (count > (limit - *pp) / MIN_HEADER_SIZE) {
        corrupt("record headers overrun the record");
        return NULL;
    }
    headers = as_tuple ? PyTuple_New((Py_ssize_t)count) : PyList_New((Py_ssize_t)count);
    if (headers == NULL) {
        return NULL;
    }
    /* Hidden from the collector (and gc.get_objects()) while it holds NULL items. */
    PyObject_GC_UnTrack(headers);
    for (i = 0; i < (Py_ssize_t)count; i++) {
        PyObject *key, *value, *pair;
        if (read_varint(pp, limit, &key_len) != VARINT_OK) {
            corrupt("malformed header key length");
            goto error;
        }
        if (key_len < 0 || key_len > limit - *pp) {
            corrupt("invalid header key length");
            goto error;
        }
        key = PyUnicode_DecodeUTF8((const char *)*pp, (Py_ssize_t)key_len, NULL);
        if (key == NULL) {
            goto error; /* UnicodeDecodeError: the caller wraps it as the pure path does */
        }
        *pp += key_len;
        value = read_nullable_bytes(pp, limit, "header value");
        if (value == NULL) {
            Py_DECREF(key);
            goto error;
        }
        pair = PyTuple_New(2);
        if (pair == NULL) {
            Py_DECREF(key);
            Py_DECREF(value);
            goto error;
        }
        PyTuple_SET_ITEM(pair, 0, key);
        PyTuple_SET_ITEM(pair, 1, value);
        PyObject_GC_UnTrack(pair); /* a str and bytes/None: cannot be part of a cycle */
        if (as_tuple) {
            PyTuple_SET_ITEM(headers, i, pair);
        }
        else {
            PyList_SET_ITEM(headers, i, pair);
        }
    }
    if (!as_tuple) {
        PyObject_GC_Track(headers);
    }
    return headers;
error:
    Py_DECREF(headers); /* unfilled items are NULL: list and tuple deallocs skip them */
    return NULL;
}

/* Make a record from six new references (always consumed). */
static PyObject *
make_record(PyTypeObject *cls, PyObject *fields[N_FIELDS])
{
    PyObject *record;
    int i;

    if (direct_alloc && (cls == record_type || cls == control_type)) {
        record = cls->tp_alloc(cls, 0);
        if (record != NULL) {
            for (i = 0; i < N_FIELDS; i++) {
                /* the slots of a fresh object are NULL: no old value to release */
                *(PyObject **)((char *)record + field_offsets[i]) = fields[i];
            }
            return record;
        }
    }
    else {
        record = PyObject_Vectorcall((PyObject *)cls, fields, N_FIELDS, NULL);
    }
    for (i = 0; i < N_FIELDS; i++) {
        Py_DECREF(fields[i]);
    }
    return record;
}

/* Sentinel for "valid but needs Python ints": decode_records returns None. */
#define NEEDS_PURE 2

/*
 * The previous record's timestamp int of a batch, reused while the next ones carry the same
 * value (records produced within a millisecond): one int allocation and free less per record.
 */
typedef struct {
    PyObject *object; /* borrowed from the previous record, or NULL */
    int64_t value;
} TimestampCache;

/*
 * Parse the record at *pp (its length varint first), not reading past ``end``.  Fills the
 * absolute offset, the timestamp (a new reference; ``log_append_time`` when given; the cached
 * int when ``cache`` holds the same value) and new references to key, value and headers.
 * 0 = done, -1 = error set, NEEDS_PURE = numbers beyond int64 (nothing returned, no error set).
 */
static int
parse_record_cached(const unsigned char **pp, const unsigned char *end, int64_t base_offset,
                    int64_t base_timestamp, PyObject *log_append_time, int headers_as_tuple,
                    TimestampCache *cache, int64_t *offset, PyObject **timestamp,
                    PyObject **key, PyObject **value, PyObject **headers)
{
    const unsigned char *p = *pp, *record_end;
    int64_t length, timestamp_delta, offset_delta;
    int status;

    if (read_varint(&p, end, &length) != VARINT_OK || length < 6 || length > end - p) {
        corrupt("record length does not fit its batch");
        return -1;
    }
    record_end = p + length;
    p += 1; /* record attributes: unused */
    status = read_varint(&p, record_end, &timestamp_delta);
    if (status == VARINT_BAD) {
        corrupt("malformed record timestamp delta");
        return -1;
    }
    if (log_append_time == NULL
        && (status == VARINT_WIDE || add_overflows(base_timestamp, timestamp_delta))) {
        return NEEDS_PURE;
    }
    status = read_varint(&p, record_end, &offset_delta);
    if (status == VARINT_BAD) {
        corrupt("malformed record offset delta");
        return -1;
    }
    if (status == VARINT_WIDE || add_overflows(base_offset, offset_delta)) {
        return NEEDS_PURE;
    }
    *key = read_nullable_bytes(&p, record_end, "key");
    if (*key == NULL) {
        return -1;
    }
    *value = read_nullable_bytes(&p, record_end, "value");
    if (*value == NULL) {
        goto drop_key;
    }
    *headers = decode_headers(&p, record_end, headers_as_tuple);
    if (*headers == NULL) {
        goto drop_value;
    }
    if (p != record_end) {
        corrupt("record length does not match its content");
        goto drop_headers;
    }
    if (log_append_time != NULL) {
        Py_INCREF(log_append_time);
        *timestamp = log_append_time;
    }
    else if (cache != NULL && cache->object != NULL
             && cache->value == base_timestamp + timestamp_delta) {
        Py_INCREF(cache->object);
        *timestamp = cache->object;
    }
    else {
        *timestamp = PyLong_FromLongLong(base_timestamp + timestamp_delta);
        if (*timestamp == NULL) {
            goto drop_headers;
        }
        if (cache != NULL) {
            cache->object = *timestamp;
            cache->value = base_timestamp + timestamp_delta;
        }
    }
    *offset = base_offset + offset_delta;
    *pp = p;
    return 0;
drop_headers:
    Py_DECREF(*headers);
drop_value:
    Py_DECREF(*value);
drop_key:
    Py_DECREF(*key);
    return -1;
}

static inline int
parse_record(const unsigned char **pp, const unsigned char *end, int64_t base_offset,
             int64_t base_timestamp, PyObject *log_append_time, int headers_as_tuple,
             int64_t *offset, PyObject **timestamp, PyObject **key, PyObject **value,
             PyObject **headers)
{
    return parse_record_cached(pp, end, base_offset, base_timestamp, log_append_time,
                               headers_as_tuple, NULL, offset, timestamp, key, value, headers);
}

static int
decode_all(const unsigned char *p, const unsigned char *end, Py_ssize_t count, int64_t base_offset,
           int64_t base_timestamp, PyObject *timestamp_type, PyObject *log_append_time,
           PyTypeObject *cls, PyObject *records)
{
    Py_ssize_t i;

    for (i = 0; i < count; i++) {
        int64_t offset;
        PyObject *fields[N_FIELDS];
        PyObject *record;
        int status;

        status = parse_record(&p, end, base_offset, base_timestamp, log_append_time, 0, &offset,
                              &fields[F_TIMESTAMP], &fields[F_KEY], &fields[F_VALUE],
                              &fields[F_HEADERS]);
        if (status != 0) {
            return status;
        }
        fields[F_OFFSET] = PyLong_FromLongLong(offset);
        if (fields[F_OFFSET] == NULL) {
            Py_DECREF(fields[F_TIMESTAMP]);
            Py_DECREF(fields[F_KEY]);
            Py_DECREF(fields[F_VALUE]);
            Py_DECREF(fields[F_HEADERS]);
            return -1;
        }
        Py_INCREF(timestamp_type);
        fields[F_TIMESTAMP_TYPE] = timestamp_type;
        record = make_record(cls, fields);
        if (record == NULL) {
            return -1;
        }
        PyList_SET_ITEM(records, i, record);
    }
    if (p != end) {
        corrupt("record count does not match the batch length");
        return -1;
    }
    return 0;
}

/* Convert an int argument to int64; 1 = does not fit (no exception set), -1 = not an int. */
static int
as_int64(PyObject *obj, int64_t *out)
{
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000 && PyLong_SHIFT == 30
    /* 3.11's layout: an int of up to two 30-bit digits (counts, sizes, epoch milliseconds)
     * read directly; PyLong_AsLongLongAndOverflow costs ~45 instructions a call (the senders
     * room, issue 24: five calls per appended record). */
    if (PyLong_CheckExact(obj)) {
        Py_ssize_t size = Py_SIZE(obj);
        const digit *digits = ((PyLongObject *)obj)->ob_digit;
        if (size >= -2 && size <= 2) {
            int64_t magnitude = size == 0 ? 0 : (int64_t)digits[0];
            if (size == 2 || size == -2)
                magnitude |= (int64_t)digits[1] << PyLong_SHIFT;
            *out = size < 0 ? -magnitude : magnitude;
            return 0;
        }
    }
#endif
    int overflow;
    long long value = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (value == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow) {
        return 1;
    }
    *out = (int64_t)value;
    return 0;
}

/* 0 when _setup() has run and the call has `expected` arguments; else -1 with an exception. */
static inline int
check_decode_call(Py_ssize_t nargs, Py_ssize_t expected, const char *name)
{
    if (corrupt_error == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_crecords._setup() has not been called");
        return -1;
    }
    if (nargs != expected) {
        PyErr_Format(PyExc_TypeError, "%s() takes exactly %zd arguments", name, expected);
        return -1;
    }
    return 0;
}

/*
 * The arguments decode_records and decode_consumer_records share: pos, end and count (args 1-3),
 * base_offset and base_timestamp (4-5), min_offset (args[min_offset_index], when that is not -1)
 * and log_append_time (NULL for None).  0 = parsed; 1 = a number beyond int64 (no exception set:
 * the caller returns None for the pure path); -1 = exception set.
 */
static inline int
parse_batch_args(PyObject *const *args, Py_ssize_t min_offset_index, PyObject *log_append_time,
                 Py_ssize_t *pos, Py_ssize_t *end, Py_ssize_t *count, int64_t *base_offset,
                 int64_t *base_timestamp, int64_t *min_offset)
{
    int status;

    *pos = PyLong_AsSsize_t(args[1]);
    if (*pos == -1 && PyErr_Occurred()) {
        return -1;
    }
    *end = PyLong_AsSsize_t(args[2]);
    if (*end == -1 && PyErr_Occurred()) {
        return -1;
    }
    *count = PyLong_AsSsize_t(args[3]);
    if (*count == -1 && PyErr_Occurred()) {
        return -1;
    }
    status = as_int64(args[4], base_offset);
    if (status == 0) {
        status = as_int64(args[5], base_timestamp);
    }
    if (status == 0 && min_offset_index >= 0) {
        status = as_int64(args[min_offset_index], min_offset);
    }
    if (status != 0) {
        return status;
    }
    if (log_append_time != NULL && !PyLong_Check(log_append_time)) {
        PyErr_SetString(PyExc_TypeError, "log_append_time must be an int or None");
        return -1;
    }
    return 0;
}

/*
 * A new list for the records of view[pos:end], hidden from the collector (and gc.get_objects())
 * while it holds NULL items; *count becomes 0 when negative (as range(count) in the pure path).
 * NULL with an exception: bounds outside the buffer, or more records than the bytes can hold.
 */
static inline PyObject *
new_record_list(const Py_buffer *view, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t *count)
{
    PyObject *records;

    if (pos < 0 || end < pos || end > view->len) {
        PyErr_SetString(PyExc_ValueError, "record bounds outside the buffer");
        return NULL;
    }
    if (*count < 0) {
        *count = 0;
    }
    if (*count > (end - pos) / MIN_RECORD_SIZE) {
        corrupt("record count does not match the batch length");
        return NULL;
    }
    records = PyList_New(*count);
    if (records != NULL) {
        PyObject_GC_UnTrack(records);
    }
    return records;
}

static PyObject *
decode_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    Py_ssize_t pos, end, count;
    int64_t base_offset, base_timestamp;
    PyObject *timestamp_type, *log_append_time, *records = NULL;
    PyTypeObject *cls;
    int status;

    (void)module;
    if (check_decode_call(nargs, 9, "decode_records") < 0) {
        return NULL;
    }
    if (!PyType_Check(args[8])) {
        PyErr_SetString(PyExc_TypeError, "record_cls must be a class");
        return NULL;
    }
    cls = (PyTypeObject *)args[8];
    timestamp_type = args[6];
    log_append_time = args[7] == Py_None ? NULL : args[7];
    status = parse_batch_args(args, -1, log_append_time, &pos, &end, &count, &base_offset,
                              &base_timestamp, NULL);
    if (status < 0) {
        return NULL;
    }
    if (status > 0) {
        Py_RETURN_NONE;
    }
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    records = new_record_list(&view, pos, end, &count);
    if (records == NULL) {
        goto done;
    }
    {
        const unsigned char *base = (const unsigned char *)view.buf;
        status = decode_all(base + pos, base + end, count, base_offset, base_timestamp,
                            timestamp_type, log_append_time, cls, records);
    }
    if (status == 0) {
        PyObject_GC_Track(records);
    }
    else {
        Py_CLEAR(records);
        if (status == NEEDS_PURE) {
            records = Py_None;
            Py_INCREF(records);
        }
    }
done:
    PyBuffer_Release(&view);
    return records;
}

/* ------------------------------------------------------------------------------------------ */
/* consumer records                                                                             */

enum { C_TOPIC, C_PARTITION, C_OFFSET, C_TIMESTAMP, C_TIMESTAMP_TYPE, C_KEY, C_VALUE, C_HEADERS,
       C_LEADER_EPOCH, N_CONSUMER_FIELDS };

/* Whether the cyclic collector needs to see ``obj`` (as gc's own untracking rule for tuples). */
static inline int
needs_tracking(PyObject *obj)
{
    if (!PyObject_IS_GC(obj)) {
        return 0;
    }
    return !PyTuple_CheckExact(obj) || PyObject_GC_IsTracked(obj);
}

/*
 * The cyclic collector is paused while a batch's records are built: each record is a GC-type
 * allocation that CPython counts towards a young-generation collection (every 700), although the
 * record is untracked at once.  The loop runs no Python code (deserializers are applied after
 * it) and keeps the GIL, so nothing can observe the pause; the allocations still count, and the first one after
 * the loop collects once instead of once per 700 records.  Returns whether it was enabled.
 */
static inline int
pause_gc(void)
{
#ifdef Py_GIL_DISABLED
    return 0; /* other threads run meanwhile: they would see the collector disabled */
#else
    return PyGC_Disable();
#endif
}

static inline void
resume_gc(int was_enabled)
{
    if (was_enabled) {
        PyGC_Enable();
    }
}

/* Whether tuple.__new__(cls, 9 items) can be replaced by allocating cls and filling it. */
static int
plain_tuple_layout(PyTypeObject *cls)
{
    return cls == &PyTuple_Type
           || (PyType_IsSubtype(cls, &PyTuple_Type)
               && cls->tp_basicsize == PyTuple_Type.tp_basicsize
               && cls->tp_itemsize == PyTuple_Type.tp_itemsize && cls->tp_dictoffset == 0
               && cls->tp_weaklistoffset == 0 && cls->tp_alloc == PyType_GenericAlloc);
}

/* The fields of a share record: the consumer's nine, then the acquired range's delivery count. */
enum { S_DELIVERY_COUNT = N_CONSUMER_FIELDS, N_SHARE_FIELDS };

/* A new (untracked) cls instance from ``n`` (<= N_SHARE_FIELDS) new references, always consumed:
 * allocated and filled when ``direct``, else tuple.__new__(cls, fields) as the pure path does. */
static PyObject *
make_tuple_record(PyTypeObject *cls, int direct, PyObject *const *fields, Py_ssize_t n)
{
    PyObject *record, *items, *args;
    Py_ssize_t i;

    if (direct) {
        record = cls == &PyTuple_Type ? PyTuple_New(n) : cls->tp_alloc(cls, n);
        if (record != NULL) {
            for (i = 0; i < n; i++) {
                PyTuple_SET_ITEM(record, i, fields[i]);
            }
            PyObject_GC_UnTrack(record);
            return record;
        }
        for (i = 0; i < n; i++) {
            Py_DECREF(fields[i]);
        }
        return NULL;
    }
    items = PyTuple_New(n);
    if (items == NULL) {
        for (i = 0; i < n; i++) {
            Py_DECREF(fields[i]);
        }
        return NULL;
    }
    for (i = 0; i < n; i++) {
        PyTuple_SET_ITEM(items, i, fields[i]);
    }
    args = PyTuple_Pack(1, items);
    Py_DECREF(items);
    if (args == NULL) {
        return NULL;
    }
    record = PyTuple_Type.tp_new(cls, args, NULL);
    Py_DECREF(args);
    return record;
}

/* Turn a ValueError (bad utf-8 in a header key) into CorruptRecordError, as _accel/_pure_v2 do. */
static void
wrap_decode_error(int64_t base_offset)
{
    PyObject *type, *value, *traceback, *message, *error;

    if (!PyErr_ExceptionMatches(PyExc_ValueError)) {
        return;
    }
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (traceback != NULL && value != NULL) {
        PyException_SetTraceback(value, traceback);
    }
    message = PyUnicode_FromFormat("malformed record in batch at offset %lld: %S",
                                   (long long)base_offset, value);
    error = message == NULL ? NULL : PyObject_CallOneArg(corrupt_error, message);
    Py_XDECREF(message);
    if (error == NULL) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
        return;
    }
    Py_XINCREF(value);
    PyException_SetContext(error, value);
    PyException_SetCause(error, value); /* steals; also sets __suppress_context__ */
    PyErr_SetObject(corrupt_error, error);
    Py_DECREF(error);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
}

/* Replace item ``index`` of a record (refcount 1, not visible to Python code) by f(item). */
static int
deserialize_field(PyObject *record, Py_ssize_t index, PyObject *func)
{
    PyObject *old = PyTuple_GET_ITEM(record, index);
    PyObject *result = PyObject_CallOneArg(func, old);
    if (result == NULL) {
        return -1;
    }
    PyTuple_SET_ITEM(record, index, result);
    Py_DECREF(old); /* bytes or None: no Python code runs */
    return 0;
}

/*
 * Apply the deserializers (NULL = identity) to key then value of records[i].  A record made
 * here directly and held only by the (untracked, unreturned) list is changed in place: no
 * Python code can see it.  Otherwise it is rebuilt with tuple.__new__.
 */
static int
deserialize_record(PyObject *records, Py_ssize_t i, PyTypeObject *cls, int direct,
                   PyObject *key_deserializer, PyObject *value_deserializer)
{
    PyObject *record = PyList_GET_ITEM(records, i), *fields[N_SHARE_FIELDS] = {NULL},
             *replacement;
    Py_ssize_t j, n = PyTuple_GET_SIZE(record);

    if (direct && Py_REFCNT(record) == 1 && !PyObject_GC_IsTracked(record)) {
        if (key_deserializer != NULL && deserialize_field(record, C_KEY, key_deserializer) < 0) {
            return -1;
        }
        if (value_deserializer != NULL
            && deserialize_field(record, C_VALUE, value_deserializer) < 0) {
            return -1;
        }
        return 0;
    }
    for (j = 0; j < n; j++) {
        fields[j] = PyTuple_GET_ITEM(record, j);
        Py_INCREF(fields[j]);
    }
    if (key_deserializer != NULL) {
        Py_SETREF(fields[C_KEY], PyObject_CallOneArg(key_deserializer, fields[C_KEY]));
    }
    if (fields[C_KEY] != NULL && value_deserializer != NULL) {
        Py_SETREF(fields[C_VALUE], PyObject_CallOneArg(value_deserializer, fields[C_VALUE]));
    }
    if (fields[C_KEY] == NULL || fields[C_VALUE] == NULL) {
        for (j = 0; j < n; j++) {
            Py_XDECREF(fields[j]);
        }
        return -1;
    }
    replacement = make_tuple_record(cls, 0, fields, n);
    if (replacement == NULL) {
        return -1;
    }
    PyList_SET_ITEM(records, i, replacement);
    Py_DECREF(record);
    return 0;
}

/*
 * What the consumer's and the share consumer's record tuples differ in; everything else
 * (decoding, filtering, the collector's pause and untracking) is decode_tuple_records'.
 */
typedef struct {
    Py_ssize_t n_fields;      /* N_CONSUMER_FIELDS or N_SHARE_FIELDS */
    int n_constants;          /* how many fields are the same object in every record ... */
    int constant_index[5];    /* ... and which (C_TOPIC, C_PARTITION, ...) */
    PyObject *constants[N_SHARE_FIELDS]; /* by field index; borrowed from the arguments */
    int64_t max_offset;       /* records past it are left out (INT64_MAX: none) */
    PyObject *key_deserializer, *value_deserializer; /* NULL: keys/values stay raw */
} TupleShape;

/* Set a per-batch field of ``shape`` (borrowed). */
static inline void
shape_constant(TupleShape *shape, int index, PyObject *value)
{
    shape->constants[index] = value;
    shape->constant_index[shape->n_constants++] = index;
}

/*
 * The loop of decode_consumer_records and decode_share_records (args 0-12 as theirs): each
 * record of the batch body parsed (kept or not), made a tuple of shape->n_fields fields, the
 * deserializers applied once the batch is decoded, and the records of atomic objects only left
 * untracked.  Records before min_offset (when the batch starts before it) and after
 * shape->max_offset are left out.  None: numbers beyond int64 (the caller uses the pure path).
 */
static PyObject *
decode_tuple_records(PyObject *const *args, TupleShape *shape)
{
    Py_buffer view;
    Py_ssize_t pos, end, count, filled = 0, i, n = shape->n_fields;
    int64_t base_offset, base_timestamp, min_offset, max_offset = shape->max_offset;
    PyObject *log_append_time, *records = NULL;
    PyTypeObject *cls;
    int status, direct, constants_atomic = 1, gc_was_enabled, j;
    const unsigned char *p, *limit;
    TimestampCache timestamps = {NULL, 0};

    if (!PyType_Check(args[7]) || !PyType_IsSubtype((PyTypeObject *)args[7], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "record_cls must be a tuple class");
        return NULL;
    }
    cls = (PyTypeObject *)args[7];
    log_append_time = args[6] == Py_None ? NULL : args[6];
    shape_constant(shape, C_TOPIC, args[8]);
    shape_constant(shape, C_PARTITION, args[9]);
    shape_constant(shape, C_TIMESTAMP_TYPE, args[10]);
    shape_constant(shape, C_LEADER_EPOCH, args[11]);
    status = parse_batch_args(args, 12, log_append_time, &pos, &end, &count, &base_offset,
                              &base_timestamp, &min_offset);
    if (status < 0) {
        return NULL;
    }
    if (status > 0) {
        Py_RETURN_NONE;
    }
    if (base_offset >= min_offset) {
        min_offset = INT64_MIN; /* as the pure filter: only a batch starting before it */
    }
    direct = plain_tuple_layout(cls);
    for (j = 0; j < shape->n_constants; j++) {
        constants_atomic &= !needs_tracking(shape->constants[shape->constant_index[j]]);
    }
    constants_atomic &= log_append_time == NULL || !needs_tracking(log_append_time);
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    records = new_record_list(&view, pos, end, &count);
    if (records == NULL) {
        goto done;
    }
    p = (const unsigned char *)view.buf + pos;
    limit = (const unsigned char *)view.buf + end;
    gc_was_enabled = pause_gc();
    for (i = 0; i < count; i++) {
        PyObject *fields[N_SHARE_FIELDS], *record;
        int64_t offset;

        status = parse_record_cached(&p, limit, base_offset, base_timestamp, log_append_time, 1,
                                     &timestamps, &offset, &fields[C_TIMESTAMP], &fields[C_KEY],
                                     &fields[C_VALUE], &fields[C_HEADERS]);
        if (status != 0) {
            goto failed_paused;
        }
        if (offset < min_offset || offset > max_offset) {
            timestamps.object = NULL; /* the cached int may be this one, released here */
            Py_DECREF(fields[C_TIMESTAMP]);
            Py_DECREF(fields[C_KEY]);
            Py_DECREF(fields[C_VALUE]);
            Py_DECREF(fields[C_HEADERS]);
            continue;
        }
        fields[C_OFFSET] = PyLong_FromLongLong(offset);
        if (fields[C_OFFSET] == NULL) {
            Py_DECREF(fields[C_TIMESTAMP]);
            Py_DECREF(fields[C_KEY]);
            Py_DECREF(fields[C_VALUE]);
            Py_DECREF(fields[C_HEADERS]);
            status = -1;
            goto failed_paused;
        }
        for (j = 0; j < shape->n_constants; j++) {
            fields[shape->constant_index[j]] = Py_NewRef(shape->constants[shape->constant_index[j]]);
        }
        record = make_tuple_record(cls, direct, fields, n);
        if (record == NULL) {
            status = -1;
            goto failed_paused;
        }
        PyList_SET_ITEM(records, filled, record);
        filled++;
    }
    resume_gc(gc_was_enabled);
    if (p != limit) {
        corrupt("record count does not match the batch length");
        status = -1;
        goto failed;
    }
    /* Records left out leave NULL slots at the end: shrink to the filled ones. */
    Py_SET_SIZE(records, filled);
    PyBuffer_Release(&view);

    if (shape->key_deserializer != NULL || shape->value_deserializer != NULL) {
        for (i = 0; i < filled; i++) {
            if (deserialize_record(records, i, cls, direct, shape->key_deserializer,
                                   shape->value_deserializer) < 0) {
                Py_DECREF(records);
                return NULL;
            }
        }
    }
    /* Records that hold only atomic objects stay untracked (as gc does for plain tuples). */
    for (i = 0; i < filled; i++) {
        PyObject *record = PyList_GET_ITEM(records, i);
        if (!PyObject_GC_IsTracked(record)
            && (!constants_atomic || needs_tracking(PyTuple_GET_ITEM(record, C_KEY))
                || needs_tracking(PyTuple_GET_ITEM(record, C_VALUE)))) {
            PyObject_GC_Track(record);
        }
    }
    PyObject_GC_Track(records);
    return records;

failed_paused:
    resume_gc(gc_was_enabled);
failed:
    Py_SET_SIZE(records, filled);
    Py_CLEAR(records);
    if (status == NEEDS_PURE) {
        records = Py_NewRef(Py_None);
    }
    else {
        wrap_decode_error(base_offset);
    }
done:
    PyBuffer_Release(&view);
    return records;
}

/*
 * decode_consumer_records(buf, pos, end, count, base_offset, base_timestamp, log_append_time,
 *                         record_cls, topic, partition, timestamp_type, leader_epoch,
 *                         min_offset, key_deserializer, value_deserializer) -> list | None
 * The records of an uncompressed v2 batch body, each as
 * tuple.__new__(record_cls, (topic, partition, offset, timestamp, timestamp_type, key, value,
 * headers tuple, leader_epoch)) with the deserializers (or None) applied to key and value,
 * after the whole batch decoded, record by record.  When base_offset < min_offset, records
 * before min_offset are left out (decoded and checked all the same).  Errors as decode_records,
 * except that bad utf-8 in a header key is already a CorruptRecordError.  None: numbers beyond
 * int64 (the caller then uses the pure path).
 */
static PyObject *
decode_consumer_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    TupleShape shape = {N_CONSUMER_FIELDS, 0, {0}, {NULL}, INT64_MAX, NULL, NULL};

    (void)module;
    if (check_decode_call(nargs, 15, "decode_consumer_records") < 0) {
        return NULL;
    }
    shape.key_deserializer = args[13] == Py_None ? NULL : args[13];
    shape.value_deserializer = args[14] == Py_None ? NULL : args[14];
    return decode_tuple_records(args, &shape);
}

/*
 * decode_share_records(buf, pos, end, count, base_offset, base_timestamp, log_append_time,
 *                      record_cls, topic, partition, timestamp_type, leader_epoch,
 *                      min_offset, max_offset, delivery_count) -> list | None
 * The records of an uncompressed v2 batch body whose offsets lie in min_offset..max_offset
 * (those before min_offset only left out when the batch starts before it, as the consumer's),
 * each as tuple.__new__(record_cls, (the nine fields of decode_consumer_records,
 * delivery_count)), keys and values raw (the contract of _pure_v2.RecordBatch.share_records).
 * Every record is decoded and checked, kept or not.  Errors and None as
 * decode_consumer_records.
 */
static PyObject *
decode_share_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    TupleShape shape = {N_SHARE_FIELDS, 0, {0}, {NULL}, INT64_MAX, NULL, NULL};
    int status;

    (void)module;
    if (check_decode_call(nargs, 15, "decode_share_records") < 0) {
        return NULL;
    }
    status = as_int64(args[13], &shape.max_offset);
    if (status < 0) {
        return NULL;
    }
    if (status > 0) {
        Py_RETURN_NONE;
    }
    shape_constant(&shape, S_DELIVERY_COUNT, args[14]);
    return decode_tuple_records(args, &shape);
}

/* ------------------------------------------------------------------------------------------ */
/* encoding                                                                                     */

/* Data and size of a key or value: 0 = None, 1 = bytes-like, -1 = outside the fast path. */
static int
fast_bytes(PyObject *obj, PyObject *buffer, const char **data, Py_ssize_t *size)
{
    if (obj == Py_None) {
        *data = NULL;
        *size = -1;
        return 0;
    }
    if (PyBytes_CheckExact(obj)) {
        *data = PyBytes_AS_STRING(obj);
        *size = PyBytes_GET_SIZE(obj);
        return 1;
    }
    if (PyByteArray_CheckExact(obj) && obj != buffer) {
        *data = PyByteArray_AS_STRING(obj);
        *size = PyByteArray_GET_SIZE(obj);
        return 1;
    }
    return -1;
}

/*
 * Size of the encoded headers (count varint included), or -1 if they are outside the fast path
 * (including a key that cannot be encoded as UTF-8: the pure path raises that error itself).
 */
static Py_ssize_t
headers_size(PyObject *headers)
{
    Py_ssize_t count, i, size;
    PyObject **items;

    if (headers == Py_None) {
        return 1;
    }
    if (PyList_CheckExact(headers) || PyTuple_CheckExact(headers)) {
        count = PySequence_Fast_GET_SIZE(headers);
        items = PySequence_Fast_ITEMS(headers);
    }
    else {
        return -1;
    }
    size = varint_size(count);
    for (i = 0; i < count; i++) {
        PyObject *pair = items[i], *key, *value;
        Py_ssize_t key_len;
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2) {
            return -1;
        }
        key = PyTuple_GET_ITEM(pair, 0);
        value = PyTuple_GET_ITEM(pair, 1);
        if (!PyUnicode_CheckExact(key) || !(value == Py_None || PyBytes_CheckExact(value))) {
            return -1;
        }
        if (PyUnicode_AsUTF8AndSize(key, &key_len) == NULL) {
            PyErr_Clear();
            return -1;
        }
        size += varint_size(key_len) + key_len;
        if (value == Py_None) {
            size += 1;
        }
        else {
            Py_ssize_t value_len = PyBytes_GET_SIZE(value);
            size += varint_size(value_len) + value_len;
        }
    }
    return size;
}

static unsigned char *
write_headers(unsigned char *p, PyObject *headers)
{
    Py_ssize_t count, i;
    PyObject **items;

    if (headers == Py_None) {
        *p++ = 0;
        return p;
    }
    count = PySequence_Fast_GET_SIZE(headers);
    items = PySequence_Fast_ITEMS(headers);
    p = write_varint(p, count);
    for (i = 0; i < count; i++) {
        PyObject *key = PyTuple_GET_ITEM(items[i], 0), *value = PyTuple_GET_ITEM(items[i], 1);
        Py_ssize_t key_len;
        /* already encoded (and cached in the str) by headers_size(): cannot fail */
        const char *key_data = PyUnicode_AsUTF8AndSize(key, &key_len);
        p = write_varint(p, key_len);
        memcpy(p, key_data, (size_t)key_len);
        p += key_len;
        if (value == Py_None) {
            p = write_varint(p, -1);
        }
        else {
            Py_ssize_t value_len = PyBytes_GET_SIZE(value);
            p = write_varint(p, value_len);
            memcpy(p, PyBytes_AS_STRING(value), (size_t)value_len);
            p += value_len;
        }
    }
    return p;
}

enum { APPEND_FALLBACK = -1, APPEND_FULL = 0, APPEND_DONE = 1 };

/*
 * Make ``buffer`` ``size`` bytes long.  When it must be reallocated, its capacity grows to
 * ``limit`` (the batch's current size limit, which the producer doubles as the batch takes more
 * buffer memory), at most twice ``size``.  bytearray's own growth (an eighth) had a batch of
 * 10 KB records copied about eight times over by realloc on its way to 1 MB; this copies it
 * about once, and holds no more than the memory the batch reserved (or twice its bytes).
 */
/*
 * Set an exact bytearray's length to ``size`` within its allocation (``size`` < ob_alloc), as
 * PyByteArray_Resize's "minor downsize" does, but also below half of the allocation, where
 * PyByteArray_Resize would shrink it: a reused batch buffer (see reclaim_buffer) keeps its
 * capacity while the batch grows into it.  0 when the buffer cannot be set in place (exported,
 * or its data does not start at its allocation).
 */
static int
set_length_in_place(PyObject *buffer, Py_ssize_t size)
{
    PyByteArrayObject *array = (PyByteArrayObject *)buffer;
    if (size >= array->ob_alloc || array->ob_exports > 0 || array->ob_start != array->ob_bytes) {
        return 0;
    }
    Py_SET_SIZE(buffer, size);
    array->ob_bytes[size] = '\0';
    return 1;
}

static int
grow_buffer(PyObject *buffer, Py_ssize_t size, int64_t limit)
{
    if (set_length_in_place(buffer, size)) {
        return 0;
    }
    if (size >= ((PyByteArrayObject *)buffer)->ob_alloc && size < PY_SSIZE_T_MAX / 2) {
        Py_ssize_t target = limit < 2 * (int64_t)size ? (Py_ssize_t)limit : 2 * size;
        /* Grown to ``target``, then set back to ``size``: at least half of it, so bytearray
           keeps the allocation (its "minor downsize" exit). */
        if (target > size && PyByteArray_Resize(buffer, target) < 0) {
            return -1;
        }
    }
    return PyByteArray_Resize(buffer, size);
}

/*
 * Append one record to ``buffer`` (an exact bytearray).  APPEND_FALLBACK, with nothing written
 * and no exception set, when an argument is outside the fast path or the buffer cannot grow.
 */
static int
append_record(PyObject *buffer, int64_t offset_delta, int64_t timestamp_delta, PyObject *key,
              PyObject *value, PyObject *headers, int64_t batch_size)
{
    const char *key_data, *value_data;
    Py_ssize_t key_len, value_len, header_len, body_len, total, old_len;
    unsigned char *p;

    if (offset_delta < 0 || fast_bytes(key, buffer, &key_data, &key_len) < 0
        || fast_bytes(value, buffer, &value_data, &value_len) < 0) {
        return APPEND_FALLBACK;
    }
    /* Python truthiness of the pure path's "if headers": empty list/tuple means none. */
    if ((PyList_CheckExact(headers) || PyTuple_CheckExact(headers))
        && PySequence_Fast_GET_SIZE(headers) == 0) {
        headers = Py_None;
    }
    header_len = headers_size(headers);
    if (header_len < 0) {
        return APPEND_FALLBACK;
    }

    body_len = 1 + varint_size(timestamp_delta) + varint_size(offset_delta)
               + (key_len < 0 ? 1 : varint_size(key_len) + key_len)
               + (value_len < 0 ? 1 : varint_size(value_len) + value_len) + header_len;
    total = varint_size(body_len) + body_len;
    old_len = PyByteArray_GET_SIZE(buffer);
    if (offset_delta != 0 && (int64_t)old_len + (int64_t)total > batch_size) {
        return APPEND_FULL;
    }
    /* No Python code runs from here on: the headers, key and value cannot change under us. */
    if (total > PY_SSIZE_T_MAX - old_len || grow_buffer(buffer, old_len + total, batch_size) < 0) {
        /* MemoryError, or BufferError while a memoryview of the buffer is alive: the pure path
           raises it again, with its own side effects on the builder state. */
        PyErr_Clear();
        return APPEND_FALLBACK;
    }
    p = (unsigned char *)PyByteArray_AS_STRING(buffer) + old_len;
    p = write_varint(p, body_len);
    *p++ = 0; /* record attributes */
    p = write_varint(p, timestamp_delta);
    p = write_varint(p, offset_delta);
    p = write_varint(p, key_len);
    if (key_len > 0) {
        memcpy(p, key_data, (size_t)key_len);
        p += key_len;
    }
    p = write_varint(p, value_len);
    if (value_len > 0) {
        memcpy(p, value_data, (size_t)value_len);
        p += value_len;
    }
    p = write_headers(p, headers);
    /* sizes and writes use the same encoders: the record fills exactly what was reserved */
    assert(p == (unsigned char *)PyByteArray_AS_STRING(buffer) + old_len + total);
    (void)p;
    return APPEND_DONE;
}

static PyObject *
append_result(int status)
{
    if (status == APPEND_FALLBACK) {
        Py_RETURN_NONE;
    }
    return PyBool_FromLong(status);
}

/*
 * reclaim_buffer(buffer, length) -> bool: make a batch buffer whose batch is done ready for
 * another: ``length`` zero bytes (the next batch's header space), its allocation kept.  False,
 * with nothing changed, unless ``buffer`` is an exact bytearray nothing exports (no view of it
 * is alive: a write still queued holds one) with room for ``length``.
 */
static PyObject *
reclaim_buffer(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "reclaim_buffer() takes exactly 2 arguments");
        return NULL;
    }
    PyObject *buffer = args[0];
    Py_ssize_t length = PyLong_AsSsize_t(args[1]);
    if (length == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (!PyByteArray_CheckExact(buffer) || length < 0 || !set_length_in_place(buffer, length)) {
        Py_RETURN_FALSE;
    }
    memset(PyByteArray_AS_STRING(buffer), 0, (size_t)length);
    Py_RETURN_TRUE;
}

/*
 * move_into_buffer(source, target) -> bool: copy ``source`` (a bytearray) into ``target`` (a
 * reclaimed buffer of larger capacity), which then holds exactly those bytes.  False, with
 * nothing changed, when ``target`` cannot take them in place.
 */
static PyObject *
move_into_buffer(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "move_into_buffer() takes exactly 2 arguments");
        return NULL;
    }
    PyObject *source = args[0], *target = args[1];
    if (!PyByteArray_CheckExact(source) || !PyByteArray_CheckExact(target) || source == target) {
        Py_RETURN_FALSE;
    }
    Py_ssize_t size = PyByteArray_GET_SIZE(source);
    if (!set_length_in_place(target, size)) {
        Py_RETURN_FALSE;
    }
    memcpy(PyByteArray_AS_STRING(target), PyByteArray_AS_STRING(source), (size_t)size);
    Py_RETURN_TRUE;
}

static PyObject *
encode_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t offset_delta, timestamp_delta, batch_size;
    int status;

    (void)module;
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "encode_record() takes exactly 7 arguments");
        return NULL;
    }
    if (!PyByteArray_CheckExact(args[0]) || !PyLong_CheckExact(args[1]) || !PyLong_CheckExact(args[2])
        || !PyLong_CheckExact(args[6])) {
        Py_RETURN_NONE;
    }
    status = as_int64(args[1], &offset_delta);
    if (status == 0) {
        status = as_int64(args[2], &timestamp_delta);
    }
    if (status == 0) {
        status = as_int64(args[6], &batch_size);
    }
    if (status < 0) {
        return NULL;
    }
    if (status > 0) {
        Py_RETURN_NONE;
    }
    return append_result(
        append_record(args[0], offset_delta, timestamp_delta, args[3], args[4], args[5],
                      batch_size));
}

/* ------------------------------------------------------------------------------------------ */
/* DefaultRecordBatchBuilder.append                                                             */

enum { B_BUILT, B_COUNT, B_BASE_TIMESTAMP, B_MAX_TIMESTAMP, B_BUFFER, B_BATCH_SIZE, N_BUILDER };

static const char *const builder_names[N_BUILDER] = {
    "_built", "_count", "_base_timestamp", "_max_timestamp", "_buffer", "_batch_size",
};

static PyTypeObject *builder_type = NULL;
static PyObject *pure_append = NULL; /* _pure_v2.DefaultRecordBatchBuilder.append */
static PyObject *now_ms = NULL;      /* () -> int, the clock of the pure path */
static Py_ssize_t builder_offsets[N_BUILDER];

#define SLOT(obj, field) (*(PyObject **)((char *)(obj) + builder_offsets[field]))

/* The value of an int slot that holds an exact int in int64 range; 0 = no. */
static int
int_slot(PyObject *self, int field, int64_t *out)
{
    PyObject *obj = SLOT(self, field);
    return obj != NULL && PyLong_CheckExact(obj) && as_int64(obj, out) == 0;
}

static PyObject *
call_pure_append(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return PyObject_Vectorcall(pure_append, args, (size_t)nargs, kwnames);
}

/*
 * builder_append(self, timestamp_ms, key, value, headers=None): the body of the accelerated
 * DefaultRecordBatchBuilder.append, reading and updating the builder's slots in place.
 * Anything unusual (already built, a timestamp that is not a plain int, keys or headers outside
 * the fast path, keyword arguments) is handed to the pure method unchanged.
 */
static PyObject *
builder_append(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *self, *timestamp, *headers, *result, *new_count;
    int64_t count, base_timestamp, max_timestamp, batch_size, ts;
    int status, own_timestamp = 0;

    (void)module;
    if (builder_type == NULL || kwnames != NULL || nargs < 4 || nargs > 5
        || !PyObject_TypeCheck(args[0], builder_type)) {
        goto pure;
    }
    self = args[0];
    headers = nargs == 5 ? args[4] : Py_None;
    timestamp = args[1];
    if (timestamp == Py_None) {
        /* Python code: run it before reading the builder's state */
        timestamp = PyObject_CallNoArgs(now_ms);
        if (timestamp == NULL) {
            return NULL;
        }
        own_timestamp = 1;
    }
    /* From here to the end of the update no Python code runs (no calls, no GC-tracked
       allocations), so the state read here is still the builder's state when it is written. */
    if (SLOT(self, B_BUILT) != Py_None || !int_slot(self, B_COUNT, &count)
        || !int_slot(self, B_BASE_TIMESTAMP, &base_timestamp)
        || !int_slot(self, B_MAX_TIMESTAMP, &max_timestamp)
        || !int_slot(self, B_BATCH_SIZE, &batch_size) || SLOT(self, B_BUFFER) == NULL
        || !PyByteArray_CheckExact(SLOT(self, B_BUFFER))) {
        goto pure_with_timestamp;
    }
    if (!PyLong_CheckExact(timestamp) || as_int64(timestamp, &ts) != 0
        || (count != 0 && sub_overflows(ts, base_timestamp)) || count == INT64_MAX) {
        PyErr_Clear();
        goto pure_with_timestamp;
    }
    new_count = PyLong_FromLongLong(count + 1); /* before writing: nothing can fail after */
    if (new_count == NULL) {
        if (own_timestamp) {
            Py_DECREF(timestamp);
        }
        return NULL;
    }
    status = append_record(SLOT(self, B_BUFFER), count, count != 0 ? ts - base_timestamp : 0,
                           args[2], args[3], headers, batch_size);
    if (status == APPEND_FALLBACK) {
        Py_DECREF(new_count);
        goto pure_with_timestamp;
    }
    if (status == APPEND_FULL) {
        Py_DECREF(new_count);
    }
    else {
        /* The old values are exact ints: releasing them runs no Python code. */
        if (count == 0) {
            Py_INCREF(timestamp);
            Py_XSETREF(SLOT(self, B_BASE_TIMESTAMP), timestamp);
        }
        if (ts > max_timestamp) {
            Py_INCREF(timestamp);
            Py_XSETREF(SLOT(self, B_MAX_TIMESTAMP), timestamp);
        }
        Py_XSETREF(SLOT(self, B_COUNT), new_count);
    }
    if (own_timestamp) {
        Py_DECREF(timestamp);
    }
    return PyBool_FromLong(status);

pure_with_timestamp:
    if (own_timestamp) {
        /* the clock was read: pass that reading on rather than reading it again */
        PyObject *call_args[5] = {args[0], timestamp, args[2], args[3], headers};
        result = call_pure_append(call_args, 5, NULL);
        Py_DECREF(timestamp);
        return result;
    }
pure:
    return call_pure_append(args, nargs, kwnames);
}

static int
find_builder_offsets(PyTypeObject *cls)
{
    int found = 0, i;
    PyTypeObject *base;
    PyMemberDef *member;

    for (base = cls; base != NULL; base = base->tp_base) {
        if (base->tp_members == NULL) {
            continue;
        }
        for (member = base->tp_members; member->name != NULL; member++) {
            for (i = 0; i < N_BUILDER; i++) {
                if (strcmp(member->name, builder_names[i]) == 0) {
                    if (member->type != MEMBER_OBJECT_EX || (found & (1 << i))) {
                        return 0;
                    }
                    builder_offsets[i] = member->offset;
                    found |= 1 << i;
                }
            }
        }
    }
    return found == (1 << N_BUILDER) - 1;
}

/* _setup_builder(builder_cls, pure_append, now_ms) -> bool: whether builder_append is usable. */
static PyObject *
setup_builder(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3 || !PyType_Check(args[0]) || !PyCallable_Check(args[1])
        || !PyCallable_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "_setup_builder(builder_cls, pure_append, now_ms)");
        return NULL;
    }
    Py_INCREF(args[1]);
    Py_XSETREF(pure_append, args[1]);
    Py_INCREF(args[2]);
    Py_XSETREF(now_ms, args[2]);
    Py_CLEAR(builder_type);
    if (find_builder_offsets((PyTypeObject *)args[0])) {
        Py_INCREF(args[0]);
        builder_type = (PyTypeObject *)args[0];
    }
    return PyBool_FromLong(builder_type != NULL);
}

/* ------------------------------------------------------------------------------------------ */
/* share consumer acknowledgement                                                               */

/*
 * share_ack_held(acquired_by_tp, pending_by_tp, record, ack_type, clock) -> bool
 * The common case of one explicit acknowledgement of a share consumer
 * (consumer/share/acknowledgements.py, whose pure twin _ack_held states the contract): the
 * record (a tuple of at least ten fields: topic, partition, offset, ..., delivery_count) is
 * held in acquired_by_tp[(topic, partition)] with its delivery count and a lock deadline after
 * clock() (seconds), that partition holds other offsets too, and pending_by_tp has a dict for it.  Then the
 * offset moves from the held dict to the pending one with ack_type, and the answer is True.
 * Anything else changes nothing and answers False: the caller's general path decides (and
 * raises its typed errors).
 */
/* time.monotonic, read at the first share_ack_held call: that clock is read directly. */
static PyObject *monotonic_clock = NULL;

/* The clock's reading in seconds: time.monotonic's own clock read without the call (the same
 * CLOCK_MONOTONIC, as a double of the same seconds), any other clock called. */
static int
read_clock(PyObject *clock, double *now)
{
    PyObject *reading;

    if (monotonic_clock == NULL) {
        PyObject *time_module = PyImport_ImportModule("time");
        if (time_module == NULL) {
            return -1;
        }
        monotonic_clock = PyObject_GetAttrString(time_module, "monotonic");
        Py_DECREF(time_module);
        if (monotonic_clock == NULL) {
            return -1;
        }
    }
#if defined(CLOCK_MONOTONIC)
    if (clock == monotonic_clock) {
        struct timespec ts;
        if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0) {
            /* As time.monotonic rounds it: nanoseconds as a double, over 1e9. */
            *now = (double)((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec) / 1e9;
            return 0;
        }
    }
#endif
    reading = PyObject_CallNoArgs(clock);
    if (reading == NULL) {
        return -1;
    }
    *now = PyFloat_AsDouble(reading);
    Py_DECREF(reading);
    return *now == -1.0 && PyErr_Occurred() ? -1 : 0;
}

/* A dict lookup with the key's hash known: CPython's own (exported, private) up to 3.13, the
 * public lookup (which hashes again) after. */
#if PY_VERSION_HEX < 0x030E0000
#define ACK_DICT_GET(dict, key, hash) _PyDict_GetItem_KnownHash((dict), (key), (hash))
#else
#define ACK_DICT_GET(dict, key, hash) PyDict_GetItemWithError((dict), (key))
#endif

/* The (topic, partition) key of the last record ack_held saw, and its hash. */
static PyObject *ack_key = NULL;
static Py_hash_t ack_key_hash;

/* share_ack_held's work: 1 settled, 0 not the common case (nothing changed), -1 an error. */
static int
ack_held(PyObject *acquired_by_tp, PyObject *pending_by_tp, PyObject *record,
         PyObject *ack_type, PyObject *clock)
{
    PyObject *key, *acquired, *pending, *entry, *offset;
    Py_hash_t hash;
    double now, deadline;
    int same, result = 0;

    if (!PyDict_CheckExact(acquired_by_tp) || !PyDict_CheckExact(pending_by_tp)
        || !PyTuple_Check(record) || PyTuple_GET_SIZE(record) < 10) {
        return 0;
    }
    if (read_clock(clock, &now) < 0) {
        return -1;
    }
    /* The records of one fetch share their topic and partition objects: their key (and its
     * hash) is made once and kept for the next call. */
    key = ack_key;
    if (key != NULL && PyTuple_GET_ITEM(key, 0) == PyTuple_GET_ITEM(record, 0)
        && PyTuple_GET_ITEM(key, 1) == PyTuple_GET_ITEM(record, 1)) {
        Py_INCREF(key);
        hash = ack_key_hash;
    }
    else {
        key = PyTuple_Pack(2, PyTuple_GET_ITEM(record, 0), PyTuple_GET_ITEM(record, 1));
        if (key == NULL) {
            return -1;
        }
        hash = PyObject_Hash(key);
        if (hash == -1) {
            Py_DECREF(key);
            return -1;
        }
        Py_INCREF(key);
        Py_XSETREF(ack_key, key);
        ack_key_hash = hash;
    }
    acquired = ACK_DICT_GET(acquired_by_tp, key, hash);
    Py_XINCREF(acquired);
    pending = acquired == NULL ? NULL : ACK_DICT_GET(pending_by_tp, key, hash);
    Py_XINCREF(pending);
    Py_DECREF(key);
    if (PyErr_Occurred()) {
        result = -1;
        goto done;
    }
    if (pending == NULL || !PyDict_CheckExact(acquired) || !PyDict_CheckExact(pending)
        || PyDict_GET_SIZE(acquired) < 2) {
        goto done; /* the general path deletes an emptied partition, creates a pending one */
    }
    offset = PyTuple_GET_ITEM(record, 2);
    entry = PyDict_GetItemWithError(acquired, offset);
    if (entry == NULL) {
        result = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 2) {
        goto done;
    }
    Py_INCREF(entry);
    same = PyObject_RichCompareBool(PyTuple_GET_ITEM(entry, 0), PyTuple_GET_ITEM(record, 9),
                                    Py_EQ);
    deadline = same > 0 ? PyFloat_AsDouble(PyTuple_GET_ITEM(entry, 1)) : 0.0;
    Py_DECREF(entry);
    if (same < 0 || (deadline == -1.0 && PyErr_Occurred())) {
        result = -1;
        goto done;
    }
    if (same == 0 || now >= deadline) {
        goto done; /* another delivery, or a lock past its deadline */
    }
    /* Queued first, released second: a failure leaves the offset held. */
    Py_INCREF(offset);
    result = PyDict_SetItem(pending, offset, ack_type) < 0 || PyDict_DelItem(acquired, offset) < 0
                 ? -1
                 : 1;
    Py_DECREF(offset);
done:
    Py_XDECREF(acquired);
    Py_XDECREF(pending);
    return result;
}

static PyObject *
share_ack_held(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    int result;

    (void)module;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "share_ack_held takes 5 positional arguments");
        return NULL;
    }
    result = ack_held(args[0], args[1], args[2], args[3], args[4]);
    if (result < 0) {
        return NULL;
    }
    return PyBool_FromLong(result);
}

/*
 * ShareAckMethod(function, accept): ShareConsumer.acknowledge without a Python frame in the
 * common case (consumer/share/consumer.py sets it on the class, as the producer's SendMethod
 * wraps Producer.send).  A call acknowledge(record), acknowledge(record, "accept" or accept)
 * or acknowledge(record, type="accept" or accept) on a consumer whose _open_acks is not None
 * (explicit mode, neither closed nor failed: the Python method's own test), an
 * Acknowledgements exactly (acks_class: its __slots__ renewed_held, acquired_offsets,
 * pending_offsets and clock are found once and read in place), that tracks no renewed offset,
 * settles the record with ack_held above.  Anything else (another type or call shape, a closed or failed
 * consumer, a record ack_held does not settle) calls the wrapped function with the same
 * arguments: it decides, and raises its typed errors.  Every other attribute (__doc__,
 * __name__, __wrapped__ for inspect.signature...) is the wrapped function's.
 */
enum { ACK_RENEWED, ACK_ACQUIRED, ACK_PENDING, ACK_CLOCK, ACK_SLOTS };

typedef struct {
    PyObject_HEAD
    PyObject *func;       /* ShareConsumer.acknowledge, the Python function */
    PyObject *accept;     /* AcknowledgeType.ACCEPT */
    PyObject *acks_class; /* Acknowledgements: its four slots are read in place */
    Py_ssize_t slot_offsets[ACK_SLOTS]; /* renewed_held, acquired_offsets, pending_offsets, clock */
    vectorcallfunc vectorcall;
} ShareAckMethod;

static PyObject *str_open_acks, *str_acquired_offsets,
    *str_pending_offsets, *str_renewed_held, *str_clock, *str_type, *str_accept;

/* An attribute's new reference, or NULL without an error set (the wrapped function reads it
 * again and raises whatever it raises). */
static PyObject *
ack_attribute(PyObject *obj, PyObject *name)
{
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL) {
        PyErr_Clear();
    }
    return value;
}

/* 1 settled, 0 not the common case, -1 an error (of ack_held). */
static int
ack_common_case(ShareAckMethod *self, PyObject *consumer, PyObject *record)
{
    PyObject *acks, *slots[ACK_SLOTS];
    int i, result = 0;

    acks = ack_attribute(consumer, str_open_acks);
    if (acks == NULL || acks == Py_None) {
        Py_XDECREF(acks);
        return 0;
    }
    if ((PyObject *)Py_TYPE(acks) != self->acks_class) {
        Py_DECREF(acks); /* a subclass, or anything else: the method decides */
        return 0;
    }
    /* Acknowledgements itself: its slots read in place (unset ones are NULL). */
    for (i = 0; i < ACK_SLOTS; i++) {
        slots[i] = *(PyObject **)((char *)acks + self->slot_offsets[i]);
        Py_XINCREF(slots[i]);
    }
    Py_DECREF(acks);
    if (slots[ACK_RENEWED] != NULL && PyDict_CheckExact(slots[ACK_RENEWED])
        && PyDict_GET_SIZE(slots[ACK_RENEWED]) == 0 && slots[ACK_ACQUIRED] != NULL
        && slots[ACK_PENDING] != NULL && slots[ACK_CLOCK] != NULL) {
        result = ack_held(slots[ACK_ACQUIRED], slots[ACK_PENDING], record, self->accept,
                          slots[ACK_CLOCK]);
    }
    for (i = 0; i < ACK_SLOTS; i++) {
        Py_XDECREF(slots[i]);
    }
    return result;
}

static PyObject *
ShareAckMethod_vectorcall(ShareAckMethod *self, PyObject *const *args, size_t nargsf,
                          PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *type = NULL;
    int result;

    if (kwnames == NULL) {
        if (nargs < 2 || nargs > 3) {
            goto wrapped;
        }
        if (nargs == 3) {
            type = args[2];
        }
    }
    else {
        if (nargs != 2 || PyTuple_GET_SIZE(kwnames) != 1
            || PyTuple_GET_ITEM(kwnames, 0) != str_type) {
            goto wrapped;
        }
        type = args[2];
    }
    if (type != NULL && type != self->accept && type != str_accept
        && !(PyUnicode_CheckExact(type) && PyUnicode_Compare(type, str_accept) == 0)) {
        goto wrapped;
    }
    result = ack_common_case(self, args[0], args[1]);
    if (result < 0) {
        return NULL;
    }
    if (result > 0) {
        Py_RETURN_NONE;
    }
wrapped:
    return PyObject_Vectorcall(self->func, args, nargsf, kwnames);
}

/* The offset of an object slot (__slots__ member) of cls, or -1 with TypeError set. */
static Py_ssize_t
ack_slot_offset(PyObject *cls, PyObject *name)
{
    PyObject *descr = PyObject_GetAttr(cls, name);
    Py_ssize_t offset = -1;

    if (descr == NULL) {
        return -1;
    }
    if (Py_IS_TYPE(descr, &PyMemberDescr_Type)
        && ((PyMemberDescrObject *)descr)->d_member->type == MEMBER_OBJECT_EX
        && !(((PyMemberDescrObject *)descr)->d_member->flags & READONLY)) {
        offset = ((PyMemberDescrObject *)descr)->d_member->offset;
    }
    else {
        PyErr_Format(PyExc_TypeError, "ShareAckMethod: %R is not an object slot of %R", name,
                     cls);
    }
    Py_DECREF(descr);
    return offset;
}

static PyObject *
ShareAckMethod_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *func, *accept, *acks_class, *names[ACK_SLOTS];
    Py_ssize_t offsets[ACK_SLOTS];
    ShareAckMethod *self;
    int i;

    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "ShareAckMethod takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOO:ShareAckMethod", &func, &accept, &acks_class)) {
        return NULL;
    }
    if (!PyFunction_Check(func) || !PyType_Check(acks_class)) {
        PyErr_SetString(PyExc_TypeError, "ShareAckMethod(function, accept, acks_class): "
                                         "ShareConsumer.acknowledge, ACCEPT, Acknowledgements");
        return NULL;
    }
    names[ACK_RENEWED] = str_renewed_held;
    names[ACK_ACQUIRED] = str_acquired_offsets;
    names[ACK_PENDING] = str_pending_offsets;
    names[ACK_CLOCK] = str_clock;
    for (i = 0; i < ACK_SLOTS; i++) {
        offsets[i] = ack_slot_offset(acks_class, names[i]);
        if (offsets[i] < 0) {
            return NULL;
        }
    }
    self = (ShareAckMethod *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    Py_INCREF(func);
    Py_INCREF(accept);
    Py_INCREF(acks_class);
    self->func = func;
    self->accept = accept;
    self->acks_class = acks_class;
    memcpy(self->slot_offsets, offsets, sizeof(offsets));
    self->vectorcall = (vectorcallfunc)ShareAckMethod_vectorcall;
    return (PyObject *)self;
}

static int
ShareAckMethod_traverse(ShareAckMethod *self, visitproc visit, void *arg)
{
    Py_VISIT(self->func);
    Py_VISIT(self->accept);
    Py_VISIT(self->acks_class);
    return 0;
}

static int
ShareAckMethod_clear(ShareAckMethod *self)
{
    Py_CLEAR(self->func);
    Py_CLEAR(self->accept);
    Py_CLEAR(self->acks_class);
    return 0;
}

static void
ShareAckMethod_dealloc(ShareAckMethod *self)
{
    PyObject_GC_UnTrack(self);
    ShareAckMethod_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
ShareAckMethod_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj); /* as a function: bound, calls us with obj first */
}

/* The wrapped function's attributes (__name__, __qualname__, __code__, __defaults__...). */
static PyObject *
ShareAckMethod_getattro(ShareAckMethod *self, PyObject *name)
{
    PyObject *found = PyObject_GenericGetAttr((PyObject *)self, name);
    if (found != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError) || self->func == NULL) {
        return found;
    }
    PyErr_Clear();
    return PyObject_GetAttr(self->func, name);
}

static PyObject *
ShareAckMethod_doc(ShareAckMethod *self, void *unused)
{
    (void)unused;
    return PyObject_GetAttrString(self->func, "__doc__");
}

static PyObject *
ShareAckMethod_repr(ShareAckMethod *self)
{
    return PyObject_Repr(self->func);
}

static PyMemberDef ShareAckMethod_members[] = {
    /* inspect.unwrap() (signature, getsource) reaches the Python function itself. */
    {"__wrapped__", T_OBJECT_EX, offsetof(ShareAckMethod, func), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef ShareAckMethod_getset[] = {
    {"__doc__", (getter)ShareAckMethod_doc, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ShareAckMethod_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name
    = "aiokafkawire.protocol.records._crecords.ShareAckMethod",
    .tp_basicsize = sizeof(ShareAckMethod),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_METHOD_DESCRIPTOR
                | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "ShareConsumer.acknowledge, its common case compiled (see _crecords.c).",
    .tp_vectorcall_offset = offsetof(ShareAckMethod, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = ShareAckMethod_new,
    .tp_dealloc = (destructor)ShareAckMethod_dealloc,
    .tp_traverse = (traverseproc)ShareAckMethod_traverse,
    .tp_clear = (inquiry)ShareAckMethod_clear,
    .tp_descr_get = ShareAckMethod_get,
    .tp_getattro = (getattrofunc)ShareAckMethod_getattro,
    .tp_repr = (reprfunc)ShareAckMethod_repr,
    .tp_members = ShareAckMethod_members,
    .tp_getset = ShareAckMethod_getset,
};

/* The interned names ShareAckMethod reads, and its type added to the module. */
static int
add_share_ack_method(PyObject *module)
{
    static const struct {
        PyObject **name;
        const char *text;
    } names[] = {
        {&str_open_acks, "_open_acks"},
        {&str_acquired_offsets, "acquired_offsets"},
        {&str_pending_offsets, "pending_offsets"},
        {&str_renewed_held, "renewed_held"},
        {&str_clock, "clock"},
        {&str_type, "type"},
        {&str_accept, "accept"},
    };
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (*names[i].name == NULL
            && (*names[i].name = PyUnicode_InternFromString(names[i].text)) == NULL) {
            return -1;
        }
    }
    if (PyType_Ready(&ShareAckMethod_Type) < 0) {
        return -1;
    }
    Py_INCREF(&ShareAckMethod_Type);
    if (PyModule_AddObject(module, "ShareAckMethod", (PyObject *)&ShareAckMethod_Type) < 0) {
        Py_DECREF(&ShareAckMethod_Type);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* setup                                                                                        */

static int
find_slot_offsets(PyTypeObject *cls, Py_ssize_t offsets[N_FIELDS])
{
    int found = 0, i;
    PyMemberDef *member;

    if (cls->tp_members == NULL) {
        return 0;
    }
    for (member = cls->tp_members; member->name != NULL; member++) {
        if (member->type != MEMBER_OBJECT_EX) {
            return 0;
        }
        for (i = 0; i < N_FIELDS; i++) {
            if (strcmp(member->name, field_names[i]) == 0) {
                offsets[i] = member->offset;
                found |= 1 << i;
                break;
            }
        }
        if (i == N_FIELDS) {
            return 0; /* a slot we would not fill */
        }
    }
    return found == (1 << N_FIELDS) - 1;
}

static PyObject *
setup(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    PyTypeObject *record, *control;
    PyObject *error;

    (void)module;
    if (nargs != 3 || !PyType_Check(args[0]) || !PyType_Check(args[1])
        || !PyExceptionClass_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError,
                        "_setup(record_cls, control_record_cls, corrupt_record_error)");
        return NULL;
    }
    record = (PyTypeObject *)args[0];
    control = (PyTypeObject *)args[1];
    error = args[2];
    Py_INCREF(record);
    Py_INCREF(control);
    Py_INCREF(error);
    Py_XSETREF(record_type, record);
    Py_XSETREF(control_type, control);
    Py_XSETREF(corrupt_error, error);

    direct_alloc = 0;
    if (find_slot_offsets(record, field_offsets)
        && PyType_IsSubtype(control, record)
        && (control->tp_members == NULL || control->tp_members->name == NULL)
        && control->tp_basicsize == record->tp_basicsize
        && record->tp_itemsize == 0 && control->tp_itemsize == 0
        && record->tp_dictoffset == 0 && control->tp_dictoffset == 0
        && record->tp_alloc != NULL && control->tp_alloc != NULL) {
        direct_alloc = 1;
    }
    return PyBool_FromLong(direct_alloc);
}

/*
 * fields_as_members(cls): give ``cls`` (a NamedTuple class) member descriptors for its fields
 * in place of collections' _tuplegetter properties.
 *
 * CPython 3.11 specialises attribute reads of member descriptors (LOAD_ATTR_SLOT: one load at a
 * fixed offset) but not of _tuplegetter (a generic getattr and a call): ``record.value`` in a
 * consumer's loop costs 40 ns less per read.  A field's member points at the tuple's item of the
 * same index, which exists in every instance: NamedTuple's __new__ and _make check the length,
 * and a tuple's items never change or become NULL.  The descriptors (and their PyMemberDef, and
 * the field names they point to) live as long as the process: a NamedTuple class is made once,
 * at import.  Read-only, like the properties they replace, with the same docstrings.
 */
static PyObject *
fields_as_members(PyObject *module, PyObject *cls)
{
    PyTypeObject *type;
    PyObject *fields, *name, *old, *doc, *descriptor;
    PyMemberDef *members;
    Py_ssize_t count, i;

    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "fields_as_members() needs a tuple subclass");
        return NULL;
    }
    type = (PyTypeObject *)cls;
    /* The items must sit where a plain tuple's do: no __dict__, no added slots. */
    if (type->tp_basicsize != PyTuple_Type.tp_basicsize || type->tp_dictoffset != 0
        || type->tp_itemsize != (Py_ssize_t)sizeof(PyObject *)) {
        PyErr_SetString(PyExc_TypeError, "fields_as_members() needs a NamedTuple class");
        return NULL;
    }
    fields = PyObject_GetAttrString(cls, "_fields");
    if (fields == NULL) {
        return NULL;
    }
    if (!PyTuple_CheckExact(fields)) {
        Py_DECREF(fields);
        PyErr_SetString(PyExc_TypeError, "a NamedTuple's _fields must be a tuple");
        return NULL;
    }
    count = PyTuple_GET_SIZE(fields);
    members = PyMem_Calloc((size_t)count + 1, sizeof(PyMemberDef));
    if (members == NULL) {
        Py_DECREF(fields);
        return PyErr_NoMemory();
    }
    for (i = 0; i < count; i++) {
        name = PyTuple_GET_ITEM(fields, i);
        if (!PyUnicode_Check(name)) {
            PyErr_SetString(PyExc_TypeError, "a NamedTuple's field names must be str");
            goto error;
        }
        old = PyObject_GetAttr(cls, name);
        if (old == NULL) {
            goto error;
        }
        doc = PyObject_GetAttrString(old, "__doc__");
        Py_DECREF(old);
        if (doc == NULL) {
            goto error;
        }
        members[i].name = PyUnicode_AsUTF8(name); /* kept alive by `fields`, never released */
        members[i].type = T_OBJECT_EX;
        members[i].offset = offsetof(PyTupleObject, ob_item) + i * (Py_ssize_t)sizeof(PyObject *);
        members[i].flags = READONLY;
        /* The docstring ("Alias for field number N") is kept alive the same way. */
        members[i].doc = PyUnicode_Check(doc) ? PyUnicode_AsUTF8(doc) : NULL;
        if (members[i].name == NULL || (PyUnicode_Check(doc) && members[i].doc == NULL)) {
            goto error;
        }
        descriptor = PyDescr_NewMember(type, &members[i]);
        if (descriptor == NULL || PyObject_SetAttr(cls, name, descriptor) < 0) {
            Py_XDECREF(descriptor);
            goto error;
        }
        Py_DECREF(descriptor);
        /* `doc` stays referenced: members[i].doc points into it. */
    }
    /* `fields` stays referenced: the members' names point into its strings. */
    Py_RETURN_NONE;

error:
    /* Descriptors already set keep pointing at `members` and `fields`: both stay allocated. */
    return NULL;
}

static PyMethodDef methods[] = {
    {"decode_records", (PyCFunction)(void (*)(void))decode_records, METH_FASTCALL,
     "Decode the records of an uncompressed v2 batch body (see _pure_v2._decode_records)."},
    {"decode_consumer_records", (PyCFunction)(void (*)(void))decode_consumer_records,
     METH_FASTCALL, "Decode the records of an uncompressed v2 batch body as consumer records."},
    {"decode_share_records", (PyCFunction)(void (*)(void))decode_share_records, METH_FASTCALL,
     "Decode the records of an uncompressed v2 batch body in an offset range as share records."},
    {"reclaim_buffer", (PyCFunction)(void (*)(void))reclaim_buffer, METH_FASTCALL,
     "Ready a done batch's buffer for another batch, keeping its allocation."},
    {"move_into_buffer", (PyCFunction)(void (*)(void))move_into_buffer, METH_FASTCALL,
     "Copy a buffer's bytes into a reclaimed buffer of larger capacity."},
    {"encode_record", (PyCFunction)(void (*)(void))encode_record, METH_FASTCALL,
     "Append one v2 record to a bytearray; False if full, None outside the fast path."},
    {"share_ack_held", (PyCFunction)(void (*)(void))share_ack_held, METH_FASTCALL,
     "The common case of one share consumer acknowledgement (see share/acknowledgements.py)."},
    {"fields_as_members", (PyCFunction)fields_as_members, METH_O,
     "Replace a NamedTuple class's field properties with member descriptors (faster reads)."},
    {"_setup", (PyCFunction)(void (*)(void))setup, METH_FASTCALL,
     "Register Record, ControlRecord and CorruptRecordError."},
    {"_setup_builder", (PyCFunction)(void (*)(void))setup_builder, METH_FASTCALL,
     "Register the builder class whose slots builder_append updates."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "aiokafkawire.protocol.records._crecords",
    "Compiled per-record loops of record batch v2 (see _accel.py).",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

/* What the capsule _api holds (see _crecords_api.h). */
static CRecordsApi api = {builder_append, &builder_type};

static PyMethodDef builder_append_def = {
    "append", (PyCFunction)(void (*)(void))builder_append, METH_FASTCALL | METH_KEYWORDS,
    "append($self, timestamp_ms, key, value, headers=None)\n--\n\n"
    "Add a record; False when the batch is full (the first record always fits)."};

PyMODINIT_FUNC
PyInit__crecords(void)
{
    PyObject *module, *function, *method;

    module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    /* An instancemethod binds like a Python function when set as a class attribute. */
    function = PyCFunction_NewEx(&builder_append_def, NULL, NULL);
    if (function == NULL) {
        Py_DECREF(module);
        return NULL;
    }
    method = PyInstanceMethod_New(function);
    Py_DECREF(function);
    if (method == NULL || PyModule_AddObject(module, "builder_append", method) < 0) {
        Py_XDECREF(method);
        Py_DECREF(module);
        return NULL;
    }
    if (add_share_ack_method(module) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    PyObject *capsule = PyCapsule_New(&api, CRECORDS_API_CAPSULE, NULL);
    if (capsule == NULL || PyModule_AddObject(module, CRECORDS_API_ATTRIBUTE, capsule) < 0) {
        Py_XDECREF(capsule);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
