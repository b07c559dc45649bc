/* Optional compiled loop for replay: check stored rows against the hash chain and turn
 * them into events, as cladelog.core.store.base.verified_events does in Python.
 *
 * The pure-Python generator stays the reference. This loop handles only rows that are
 * well formed and verify; at the first row it has any doubt about (a wrong column type,
 * a hash that does not match, data that does not parse, a callback that raises) it stops
 * without an error and leaves that row in `pending`, with the chain state it reached, so
 * the Python loop takes over from exactly there and words the error itself. Errors of
 * the row source (the database cursor) propagate unchanged.
 *
 * Nothing here decides what is valid that Python does not decide too: the callbacks
 * (shape, time, meta) are the Python functions, and a decoder is called as Python calls it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <dlfcn.h>

/* OpenSSL's one-shot SHA-256, from the libcrypto that Python's own _hashlib has loaded
 * (looked up, not linked: no OpenSSL headers are needed to build this). When it cannot
 * be found, hashlib.sha256 is called instead. */
typedef unsigned char *(*sha256_fn)(const unsigned char *, size_t, unsigned char *);
static sha256_fn openssl_sha256;

typedef struct {
    PyObject_HEAD
    PyObject *rows;        /* iterator of 9-tuples */
    PyObject *shapes;      /* dict (stream, type, schema_version) -> (prefix, suffix, decode, raw) */
    PyObject *shape_cb;    /* (stream, type, schema_version, pos) -> that tuple, cached in shapes */
    PyObject *meta_cb;     /* (meta_bytes) -> (meta dict, cacheable bool) */
    PyObject *scan;        /* json scanner: (text, 0) -> (value, end) */
    PyObject *sha256;      /* hashlib.sha256 */
    PyTypeObject *event_type;
    PyObject *pending;     /* the row handed back to Python, or None */
    PyObject *prev_hex;    /* str: hash of the last verified event */
    long long position;    /* position of the last verified event */
    unsigned char prev_raw[32];
    /* per-run caches */
    PyObject *last_key_stream, *last_key_type, *last_key_version;
    PyObject *last_shape;  /* (prefix, suffix, decode, raw) */
    PyObject *last_time, *time_q;
    PyObject *last_meta_b, *last_meta;
} VerifyIter;

static PyObject *digest_name;  /* "digest" */

static void
verify_dealloc(VerifyIter *self)
{
    PyObject_GC_UnTrack(self);
    Py_XDECREF(self->rows);
    Py_XDECREF(self->shapes);
    Py_XDECREF(self->shape_cb);
    Py_XDECREF(self->meta_cb);
    Py_XDECREF(self->scan);
    Py_XDECREF(self->sha256);
    Py_XDECREF(self->event_type);
    Py_XDECREF(self->pending);
    Py_XDECREF(self->prev_hex);
    Py_XDECREF(self->last_key_stream);
    Py_XDECREF(self->last_key_type);
    Py_XDECREF(self->last_key_version);
    Py_XDECREF(self->last_shape);
    Py_XDECREF(self->last_time);
    Py_XDECREF(self->time_q);
    Py_XDECREF(self->last_meta_b);
    Py_XDECREF(self->last_meta);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
verify_traverse(VerifyIter *self, visitproc visit, void *arg)
{
    Py_VISIT(self->rows);
    Py_VISIT(self->shapes);
    Py_VISIT(self->shape_cb);
    Py_VISIT(self->meta_cb);
    Py_VISIT(self->scan);
    Py_VISIT(self->sha256);
    Py_VISIT(self->pending);
    Py_VISIT(self->last_shape);
    Py_VISIT(self->last_meta);
    return 0;
}

/* hand `row` back to Python: stop iterating, clear any error a check raised */
static PyObject *
hand_over(VerifyIter *self, PyObject *row)
{
    if (PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt) ||
            PyErr_ExceptionMatches(PyExc_MemoryError)) {
            Py_DECREF(row);
            return NULL;
        }
        PyErr_Clear();
    }
    Py_XSETREF(self->pending, row);  /* steals the reference */
    return NULL;
}

/* equal str objects (both exact str) without hashing them */
static int
same_str(PyObject *a, PyObject *b)
{
    if (a == b)
        return 1;
    if (b == NULL || PyUnicode_GET_LENGTH(a) != PyUnicode_GET_LENGTH(b)
        || PyUnicode_KIND(a) != PyUnicode_KIND(b))
        return 0;
    return memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b),
                  (size_t)PyUnicode_GET_LENGTH(a) * PyUnicode_KIND(a)) == 0;
}

static const char HEX[] = "0123456789abcdef";

static void
hex32(const unsigned char *d, Py_UCS1 *out)
{
    for (int i = 0; i < 32; i++) {
        out[2 * i] = (Py_UCS1)HEX[d[i] >> 4];
        out[2 * i + 1] = (Py_UCS1)HEX[d[i] & 15];
    }
}

static int
sha256_into(PyObject *sha256, PyObject *buffer, unsigned char *out)
{
    if (openssl_sha256 != NULL) {
        openssl_sha256((const unsigned char *)PyBytes_AS_STRING(buffer),
                       (size_t)PyBytes_GET_SIZE(buffer), out);
        return 0;
    }
    PyObject *h = PyObject_CallOneArg(sha256, buffer);
    PyObject *digest = h ? PyObject_CallMethodNoArgs(h, digest_name) : NULL;
    Py_XDECREF(h);
    if (digest == NULL)
        return -1;
    if (!PyBytes_CheckExact(digest) || PyBytes_GET_SIZE(digest) != 32) {
        Py_DECREF(digest);
        PyErr_SetString(PyExc_TypeError, "sha256 digest is not 32 bytes");
        return -1;
    }
    memcpy(out, PyBytes_AS_STRING(digest), 32);
    Py_DECREF(digest);
    return 0;
}


/* -- growing byte buffers, JSON strings --------------------------------------------------- */
typedef struct {
    char *buf;
    Py_ssize_t len, cap;
} Out;

static int
out_grow(Out *o, Py_ssize_t more)
{
    if (o->len + more <= o->cap)
        return 0;
    Py_ssize_t cap = o->cap * 2 > o->len + more ? o->cap * 2 : o->len + more + 256;
    char *b = PyMem_Realloc(o->buf, (size_t)cap);
    if (b == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->buf = b;
    o->cap = cap;
    return 0;
}

static int
out_put(Out *o, const char *s, Py_ssize_t n)
{
    if (out_grow(o, n) < 0)
        return -1;
    memcpy(o->buf + o->len, s, (size_t)n);
    o->len += n;
    return 0;
}

/* a JSON string as JSON.stringify writes it: '"', '\\' and controls escaped, the rest as is */
static int
out_string(Out *o, PyObject *str)
{
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(str, &n);  /* fails on a lone surrogate */
    if (u == NULL)
        return -1;
    if (out_grow(o, n * 6 + 2) < 0)
        return -1;
    char *p = o->buf + o->len;
    *p++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)u[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *p++ = (char)c;
            continue;
        }
        *p++ = '\\';
        switch (c) {
        case '"': *p++ = '"'; break;
        case '\\': *p++ = '\\'; break;
        case '\b': *p++ = 'b'; break;
        case '\f': *p++ = 'f'; break;
        case '\n': *p++ = 'n'; break;
        case '\r': *p++ = 'r'; break;
        case '\t': *p++ = 't'; break;
        default:
            *p++ = 'u'; *p++ = '0'; *p++ = '0';
            *p++ = HEX[c >> 4]; *p++ = HEX[c & 15];
        }
    }
    *p++ = '"';
    o->len = p - o->buf;
    return 0;
}

#define PUT(lit) do { memcpy(p, lit, sizeof(lit) - 1); p += sizeof(lit) - 1; } while (0)
#define PUTN(src, n) do { memcpy(p, src, (size_t)(n)); p += (n); } while (0)

static PyObject *
verify_next(VerifyIter *self)
{
    if (self->rows == NULL)
        return NULL;
    PyObject *row = PyIter_Next(self->rows);
    if (row == NULL)
        return NULL;  /* exhausted, or the cursor's own error */
    if (!PyTuple_CheckExact(row) || PyTuple_GET_SIZE(row) != 9)
        return hand_over(self, row);
    PyObject *pos_o = PyTuple_GET_ITEM(row, 0), *stream = PyTuple_GET_ITEM(row, 1),
             *sv_o = PyTuple_GET_ITEM(row, 2), *type = PyTuple_GET_ITEM(row, 3),
             *schema = PyTuple_GET_ITEM(row, 4), *recorded_at = PyTuple_GET_ITEM(row, 5),
             *data_b = PyTuple_GET_ITEM(row, 6), *meta_b = PyTuple_GET_ITEM(row, 7),
             *hash_o = PyTuple_GET_ITEM(row, 8);
    if (!PyLong_CheckExact(pos_o) || !PyLong_CheckExact(sv_o) || !PyLong_CheckExact(schema)
        || !PyUnicode_CheckExact(stream) || !PyUnicode_CheckExact(type)
        || !PyUnicode_CheckExact(recorded_at) || !PyBytes_CheckExact(data_b)
        || !PyBytes_CheckExact(meta_b) || !PyUnicode_CheckExact(hash_o)
        || !PyUnicode_IS_COMPACT_ASCII(hash_o) || PyUnicode_GET_LENGTH(hash_o) != 64)
        return hand_over(self, row);
    long long pos = PyLong_AsLongLong(pos_o);
    if (pos == -1 && PyErr_Occurred())
        return hand_over(self, row);
    if (pos != self->position + 1)
        return hand_over(self, row);
    long long sv = PyLong_AsLongLong(sv_o);
    if (sv == -1 && PyErr_Occurred())
        return hand_over(self, row);

    /* the body's bytes around stream_version, per (stream, type, schema_version) */
    if (self->last_shape == NULL || !same_str(stream, self->last_key_stream)
        || !same_str(type, self->last_key_type)
        || PyObject_RichCompareBool(schema, self->last_key_version, Py_EQ) != 1) {
        PyObject *key = PyTuple_Pack(3, stream, type, schema);
        if (key == NULL)
            return hand_over(self, row);
        PyObject *shape = PyDict_GetItemWithError(self->shapes, key);
        if (shape != NULL) {
            Py_INCREF(shape);
        } else if (!PyErr_Occurred()) {
            shape = PyObject_CallFunctionObjArgs(self->shape_cb, stream, type, schema,
                                                 pos_o, NULL);
        }
        Py_DECREF(key);
        if (shape == NULL)
            return hand_over(self, row);
        if (!PyTuple_CheckExact(shape) || PyTuple_GET_SIZE(shape) != 4
            || !PyBytes_CheckExact(PyTuple_GET_ITEM(shape, 0))
            || !PyBytes_CheckExact(PyTuple_GET_ITEM(shape, 1))
            || !PyBool_Check(PyTuple_GET_ITEM(shape, 3))) {
            Py_DECREF(shape);
            return hand_over(self, row);
        }
        Py_XSETREF(self->last_shape, shape);
        Py_INCREF(stream);
        Py_XSETREF(self->last_key_stream, stream);
        Py_INCREF(type);
        Py_XSETREF(self->last_key_type, type);
        Py_INCREF(schema);
        Py_XSETREF(self->last_key_version, schema);
    }
    /* a batch shares one time: quote it once */
    if (self->time_q == NULL || recorded_at != self->last_time) {
        if (self->time_q == NULL || !same_str(recorded_at, self->last_time)) {
            Out o = {NULL, 0, 0};  /* quoted as a JSON string, as the Python loop does */
            PyObject *q = out_string(&o, recorded_at) < 0 ? NULL
                          : PyBytes_FromStringAndSize(o.buf, o.len);
            PyMem_Free(o.buf);
            if (q == NULL)  /* a lone surrogate: the Python loop words it */
                return hand_over(self, row);
            Py_XSETREF(self->time_q, q);
        }
        Py_INCREF(recorded_at);
        Py_XSETREF(self->last_time, recorded_at);
    }

    PyObject *prefix = PyTuple_GET_ITEM(self->last_shape, 0);
    PyObject *suffix = PyTuple_GET_ITEM(self->last_shape, 1);
    PyObject *decode = PyTuple_GET_ITEM(self->last_shape, 2);
    int raw_decode = PyTuple_GET_ITEM(self->last_shape, 3) == Py_True && decode != Py_None;
    char posd[24], svd[24];
    unsigned char raw[32];
    int posn = snprintf(posd, sizeof posd, "%lld", pos);
    int svn = snprintf(svd, sizeof svd, "%lld", sv);
    Py_ssize_t dn = PyBytes_GET_SIZE(data_b), mn = PyBytes_GET_SIZE(meta_b);
    Py_ssize_t tn = PyBytes_GET_SIZE(self->time_q);
    Py_ssize_t pn = PyBytes_GET_SIZE(prefix), xn = PyBytes_GET_SIZE(suffix);
    /* {"data":D,"meta":M,"position":P,"prev_hash":"H","recorded_at":T<prefix>V<suffix> */
    Py_ssize_t body_n = 8 + dn + 8 + mn + 12 + posn + 14 + 64 + 16 + tn + pn + svn + xn;
    /* prev_raw + body in one buffer: the hash covers both, the event keeps the body */
    PyObject *hashed = PyBytes_FromStringAndSize(NULL, 32 + body_n);
    if (hashed == NULL)
        return hand_over(self, row);
    char *p = PyBytes_AS_STRING(hashed);
    PUTN(self->prev_raw, 32);
    PUT("{\"data\":");
    PUTN(PyBytes_AS_STRING(data_b), dn);
    PUT(",\"meta\":");
    PUTN(PyBytes_AS_STRING(meta_b), mn);
    PUT(",\"position\":");
    PUTN(posd, posn);
    PUT(",\"prev_hash\":\"");
    PUTN(PyUnicode_1BYTE_DATA(self->prev_hex), 64);
    PUT("\",\"recorded_at\":");
    PUTN(PyBytes_AS_STRING(self->time_q), tn);
    PUTN(PyBytes_AS_STRING(prefix), pn);
    PUTN(svd, svn);
    PUTN(PyBytes_AS_STRING(suffix), xn);
    if (sha256_into(self->sha256, hashed, raw) < 0) {
        Py_DECREF(hashed);
        return hand_over(self, row);
    }
    const unsigned char *d = raw;
    const Py_UCS1 *want = PyUnicode_1BYTE_DATA(hash_o);
    int match = 1;
    for (int i = 0; i < 32; i++) {
        if (HEX[d[i] >> 4] != want[2 * i] || HEX[d[i] & 15] != want[2 * i + 1]) {
            match = 0;
            break;
        }
    }
    if (!match) {
        Py_DECREF(hashed);
        return hand_over(self, row);
    }
    PyObject *body = PyBytes_FromStringAndSize(PyBytes_AS_STRING(hashed) + 32, body_n);
    Py_DECREF(hashed);
    if (body == NULL)
        return hand_over(self, row);

    PyObject *data = NULL, *meta = NULL;
    if (raw_decode) {
        /* a decoder of the stored bytes: they are not parsed here */
        data = PyObject_CallOneArg(decode, data_b);
        if (data == NULL)
            goto fail;
    } else {
        /* data: the scanner behind json.loads, on the whole text */
        PyObject *text = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(data_b), dn, NULL);
        if (text == NULL)
            goto fail;
        PyObject *zero = PyLong_FromLong(0);
        PyObject *scanned = zero ? PyObject_CallFunctionObjArgs(self->scan, text, zero, NULL)
                                 : NULL;
        Py_XDECREF(zero);
        if (scanned == NULL || !PyTuple_CheckExact(scanned) || PyTuple_GET_SIZE(scanned) != 2
            || !PyLong_CheckExact(PyTuple_GET_ITEM(scanned, 1))
            || PyLong_AsSsize_t(PyTuple_GET_ITEM(scanned, 1)) != PyUnicode_GET_LENGTH(text)) {
            Py_XDECREF(scanned);
            Py_DECREF(text);
            goto fail;
        }
        Py_DECREF(text);
        data = PyTuple_GET_ITEM(scanned, 0);
        Py_INCREF(data);
        Py_DECREF(scanned);
    }

    /* meta: mostly the same bytes as the last event's; flat ones are cached and copied */
    if (self->last_meta_b != NULL && PyBytes_GET_SIZE(meta_b) == PyBytes_GET_SIZE(self->last_meta_b)
        && memcmp(PyBytes_AS_STRING(meta_b), PyBytes_AS_STRING(self->last_meta_b), mn) == 0) {
        meta = PyDict_Copy(self->last_meta);
        if (meta == NULL)
            goto fail;
    } else {
        PyObject *got = PyObject_CallOneArg(self->meta_cb, meta_b);
        if (got == NULL)
            goto fail;
        if (!PyTuple_CheckExact(got) || PyTuple_GET_SIZE(got) != 2
            || !PyDict_CheckExact(PyTuple_GET_ITEM(got, 0))) {
            Py_DECREF(got);
            goto fail;
        }
        PyObject *m = PyTuple_GET_ITEM(got, 0);
        if (PyObject_IsTrue(PyTuple_GET_ITEM(got, 1)) == 1) {  /* cached: hand out copies */
            Py_INCREF(meta_b);
            Py_XSETREF(self->last_meta_b, meta_b);
            Py_INCREF(m);
            Py_XSETREF(self->last_meta, m);
            meta = PyDict_Copy(m);
        } else {
            Py_INCREF(m);
            meta = m;
        }
        Py_DECREF(got);
        if (meta == NULL)
            goto fail;
    }
    if (decode != Py_None && !raw_decode) {
        PyObject *decoded = PyObject_CallOneArg(decode, data);
        if (decoded == NULL)
            goto fail;
        Py_SETREF(data, decoded);
    }

    PyObject *ev = self->event_type->tp_alloc(self->event_type, 11);
    if (ev == NULL)
        goto fail;
    Py_INCREF(pos_o);
    PyTuple_SET_ITEM(ev, 0, pos_o);
    Py_INCREF(stream);
    PyTuple_SET_ITEM(ev, 1, stream);
    Py_INCREF(sv_o);
    PyTuple_SET_ITEM(ev, 2, sv_o);
    Py_INCREF(type);
    PyTuple_SET_ITEM(ev, 3, type);
    Py_INCREF(schema);
    PyTuple_SET_ITEM(ev, 4, schema);
    PyTuple_SET_ITEM(ev, 5, data);   /* steals */
    PyTuple_SET_ITEM(ev, 6, meta);   /* steals */
    Py_INCREF(recorded_at);
    PyTuple_SET_ITEM(ev, 7, recorded_at);
    PyTuple_SET_ITEM(ev, 8, self->prev_hex);  /* steals our reference */
    Py_INCREF(hash_o);
    PyTuple_SET_ITEM(ev, 9, hash_o);
    PyTuple_SET_ITEM(ev, 10, body);  /* steals */
    Py_INCREF(hash_o);
    self->prev_hex = hash_o;
    memcpy(self->prev_raw, d, 32);
    self->position = pos;
    Py_DECREF(row);
    return ev;

fail:
    Py_XDECREF(data);
    Py_XDECREF(meta);
    Py_DECREF(body);
    return hand_over(self, row);
}

static PyObject *
verify_get_pending(VerifyIter *self, void *closure)
{
    PyObject *v = self->pending ? self->pending : Py_None;
    Py_INCREF(v);
    return v;
}

static PyObject *
verify_get_position(VerifyIter *self, void *closure)
{
    return PyLong_FromLongLong(self->position);
}

static PyObject *
verify_get_prev_hex(VerifyIter *self, void *closure)
{
    Py_INCREF(self->prev_hex);
    return self->prev_hex;
}

static PyObject *
verify_get_prev_raw(VerifyIter *self, void *closure)
{
    return PyBytes_FromStringAndSize((const char *)self->prev_raw, 32);
}

static PyGetSetDef verify_getset[] = {
    {"pending", (getter)verify_get_pending, NULL, "the row handed back to Python, or None"},
    {"position", (getter)verify_get_position, NULL, "position of the last verified event"},
    {"prev_hash", (getter)verify_get_prev_hex, NULL, "hash (hex) of the last verified event"},
    {"prev_raw", (getter)verify_get_prev_raw, NULL, "hash (bytes) of the last verified event"},
    {NULL}
};

static PyTypeObject VerifyIterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cladelog.core._speedups.VerifyIter",
    .tp_basicsize = sizeof(VerifyIter),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_dealloc = (destructor)verify_dealloc,
    .tp_traverse = (traverseproc)verify_traverse,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)verify_next,
    .tp_getset = verify_getset,
    .tp_doc = "Rows checked against the chain, as events (see verify_rows).",
};

static PyObject *
verify_rows(PyObject *module, PyObject *args)
{
    PyObject *rows, *shapes, *shape_cb, *meta_cb, *scan, *sha256, *prev_hex;
    PyObject *event_type;
    long long position;
    Py_buffer prev_raw;
    if (!PyArg_ParseTuple(args, "OO!OOOOO!LUy*:verify_rows", &rows, &PyDict_Type, &shapes,
                          &shape_cb, &meta_cb, &scan, &sha256, &PyType_Type,
                          &event_type, &position, &prev_hex, &prev_raw))
        return NULL;
    if (prev_raw.len != 32 || !PyUnicode_IS_COMPACT_ASCII(prev_hex)
        || PyUnicode_GET_LENGTH(prev_hex) != 64
        || !PyType_IsSubtype((PyTypeObject *)event_type, &PyTuple_Type)) {
        PyBuffer_Release(&prev_raw);
        PyErr_SetString(PyExc_ValueError, "verify_rows: bad start");
        return NULL;
    }
    PyObject *it = PyObject_GetIter(rows);
    if (it == NULL) {
        PyBuffer_Release(&prev_raw);
        return NULL;
    }
    VerifyIter *self = PyObject_GC_New(VerifyIter, &VerifyIterType);
    if (self == NULL) {
        Py_DECREF(it);
        PyBuffer_Release(&prev_raw);
        return NULL;
    }
    memset((char *)self + sizeof(PyObject), 0, sizeof(VerifyIter) - sizeof(PyObject));
    self->rows = it;
    Py_INCREF(shapes);
    self->shapes = shapes;
    Py_INCREF(shape_cb);
    self->shape_cb = shape_cb;
    Py_INCREF(meta_cb);
    self->meta_cb = meta_cb;
    Py_INCREF(scan);
    self->scan = scan;
    Py_INCREF(sha256);
    self->sha256 = sha256;
    Py_INCREF(event_type);
    self->event_type = (PyTypeObject *)event_type;
    Py_INCREF(prev_hex);
    self->prev_hex = prev_hex;
    self->position = position;
    memcpy(self->prev_raw, prev_raw.buf, 32);
    PyBuffer_Release(&prev_raw);
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

/* -- laying out and hashing a batch for append --------------------------------------------
 *
 * build_rows(events, parts, position, prev_hash, prev_raw, versions, shapes, shape_cb,
 *            event_type) -> (events, rows) | None
 *
 * The loop of cladelog.core.store.base.build_rows after its checks: number each event,
 * lay out its canonical body, chain its hash. `versions` (a dict the caller owns) is
 * updated with each stream's new version; `shapes` caches shape_cb(stream, type,
 * schema_version, position) -> (prefix, suffix), the bytes around stream_version.
 * Returns None, before anything is built, for input it does not expect (the Python
 * loop then does the work); an exception of shape_cb propagates.
 */
static PyObject *
build_rows(PyObject *module, PyObject *args)
{
    PyObject *events, *parts, *prev_hex, *versions, *shapes, *shape_cb, *event_type, *sha256;
    PyObject *now;
    long long position;
    Py_buffer prev_raw_buf;
    if (!PyArg_ParseTuple(args, "O!O!LUy*O!O!OUO!O:build_rows", &PyList_Type, &events,
                          &PyList_Type, &parts, &position, &prev_hex, &prev_raw_buf,
                          &PyDict_Type, &versions, &PyDict_Type, &shapes, &shape_cb, &now,
                          &PyType_Type, &event_type, &sha256))
        return NULL;
    unsigned char prev_raw[32];
    int ok = prev_raw_buf.len == 32;
    if (ok)
        memcpy(prev_raw, prev_raw_buf.buf, 32);
    PyBuffer_Release(&prev_raw_buf);
    Py_ssize_t n = PyList_GET_SIZE(events);
    if (!ok || PyList_GET_SIZE(parts) != n || !PyUnicode_IS_COMPACT_ASCII(prev_hex)
        || PyUnicode_GET_LENGTH(prev_hex) != 64
        || !PyType_IsSubtype((PyTypeObject *)event_type, &PyTuple_Type))
        Py_RETURN_NONE;
    /* first, without building anything: is every event what the loop expects? */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *e = PyList_GET_ITEM(events, i), *part = PyList_GET_ITEM(parts, i);
        if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) < 5 || !PyTuple_CheckExact(part)
            || PyTuple_GET_SIZE(part) != 2
            || !PyUnicode_CheckExact(PyTuple_GET_ITEM(e, 0))
            || !PyUnicode_CheckExact(PyTuple_GET_ITEM(e, 1))
            || !PyLong_CheckExact(PyTuple_GET_ITEM(e, 2))
            || !PyBytes_CheckExact(PyTuple_GET_ITEM(part, 0))
            || !PyBytes_CheckExact(PyTuple_GET_ITEM(part, 1)))
            Py_RETURN_NONE;
        PyObject *v = PyDict_GetItemWithError(versions, PyTuple_GET_ITEM(e, 0));
        if (v == NULL && PyErr_Occurred())
            return NULL;
        if (v != NULL) {  /* an exact int, far from overflowing when the batch is added */
            int overflow = 0;
            long long x = PyLong_CheckExact(v) ? PyLong_AsLongLongAndOverflow(v, &overflow) : -1;
            if (x < 0 || overflow || x > (1LL << 62))
                Py_RETURN_NONE;
        }
    }
    PyObject *out = PyList_New(n), *rows = PyList_New(n);
    PyObject *prev = prev_hex;
    Py_INCREF(prev);
    PyObject *last_stream = NULL, *last_type = NULL, *last_schema = NULL, *shape = NULL;
    if (out == NULL || rows == NULL)
        goto error;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *e = PyList_GET_ITEM(events, i), *part = PyList_GET_ITEM(parts, i);
        PyObject *stream = PyTuple_GET_ITEM(e, 0), *type = PyTuple_GET_ITEM(e, 1),
                 *schema = PyTuple_GET_ITEM(e, 2);
        PyObject *data_b = PyTuple_GET_ITEM(part, 0), *meta_b = PyTuple_GET_ITEM(part, 1);
        position += 1;
        PyObject *v = PyDict_GetItemWithError(versions, stream);
        if (v == NULL && PyErr_Occurred())
            goto error;
        long long version = v == NULL ? 1 : PyLong_AsLongLong(v) + 1;
        if (version == 0 && PyErr_Occurred())
            goto error;
        PyObject *version_o = PyLong_FromLongLong(version);
        if (version_o == NULL || PyDict_SetItem(versions, stream, version_o) < 0) {
            Py_XDECREF(version_o);
            goto error;
        }
        Py_DECREF(version_o);  /* the dict holds it */
        if (shape == NULL || !same_str(stream, last_stream) || !same_str(type, last_type)
            || PyObject_RichCompareBool(schema, last_schema, Py_EQ) != 1) {
            PyObject *key = PyTuple_Pack(3, stream, type, schema);
            if (key == NULL)
                goto error;
            PyObject *got = PyDict_GetItemWithError(shapes, key);
            if (got != NULL) {
                Py_INCREF(got);
            } else if (!PyErr_Occurred()) {
                PyObject *pos_o = PyLong_FromLongLong(position);
                got = pos_o ? PyObject_CallFunctionObjArgs(shape_cb, stream, type, schema,
                                                           pos_o, NULL) : NULL;
                Py_XDECREF(pos_o);
                if (got != NULL && PyDict_SetItem(shapes, key, got) < 0)
                    Py_CLEAR(got);
            }
            Py_DECREF(key);
            if (got == NULL)
                goto error;
            if (!PyTuple_CheckExact(got) || PyTuple_GET_SIZE(got) != 2
                || !PyBytes_CheckExact(PyTuple_GET_ITEM(got, 0))
                || !PyBytes_CheckExact(PyTuple_GET_ITEM(got, 1))) {
                Py_DECREF(got);
                PyErr_SetString(PyExc_TypeError, "build_rows: shape_cb must give two bytes");
                goto error;
            }
            Py_XSETREF(shape, got);
            last_stream = stream;  /* borrowed: the events list keeps them alive */
            last_type = type;
            last_schema = schema;
        }
        PyObject *prefix = PyTuple_GET_ITEM(shape, 0), *suffix = PyTuple_GET_ITEM(shape, 1);
        char posd[24], vd[24];
        int posn = snprintf(posd, sizeof posd, "%lld", position);
        int vn = snprintf(vd, sizeof vd, "%lld", version);
        Py_ssize_t dn = PyBytes_GET_SIZE(data_b), mn = PyBytes_GET_SIZE(meta_b);
        Py_ssize_t pn = PyBytes_GET_SIZE(prefix), xn = PyBytes_GET_SIZE(suffix);
        /* {"data":D,"meta":M,"position":P,"prev_hash":"H<prefix>V<suffix> */
        Py_ssize_t body_n = 8 + dn + 8 + mn + 12 + posn + 14 + 64 + pn + vn + xn;
        PyObject *hashed = PyBytes_FromStringAndSize(NULL, 32 + body_n);
        if (hashed == NULL)
            goto error;
        char *p = PyBytes_AS_STRING(hashed);
        PUTN(prev_raw, 32);
        PUT("{\"data\":");
        PUTN(PyBytes_AS_STRING(data_b), dn);
        PUT(",\"meta\":");
        PUTN(PyBytes_AS_STRING(meta_b), mn);
        PUT(",\"position\":");
        PUTN(posd, posn);
        PUT(",\"prev_hash\":\"");
        PUTN(PyUnicode_1BYTE_DATA(prev), 64);
        PUTN(PyBytes_AS_STRING(prefix), pn);
        PUTN(vd, vn);
        PUTN(PyBytes_AS_STRING(suffix), xn);
        if (sha256_into(sha256, hashed, prev_raw) < 0) {
            Py_DECREF(hashed);
            goto error;
        }
        PyObject *body = PyBytes_FromStringAndSize(PyBytes_AS_STRING(hashed) + 32, body_n);
        Py_DECREF(hashed);
        PyObject *hex = body ? PyUnicode_New(64, 127) : NULL;
        PyObject *pos_o = hex ? PyLong_FromLongLong(position) : NULL;
        PyObject *ev = pos_o ? ((PyTypeObject *)event_type)->tp_alloc(
                                   (PyTypeObject *)event_type, 11) : NULL;
        PyObject *row = ev ? PyTuple_New(10) : NULL;
        if (row == NULL) {
            Py_XDECREF(body);
            Py_XDECREF(hex);
            Py_XDECREF(pos_o);
            Py_XDECREF(ev);
            goto error;
        }
        hex32(prev_raw, PyUnicode_1BYTE_DATA(hex));
        version_o = PyDict_GetItem(versions, stream);  /* borrowed, set above */
        PyObject *evitems[11] = {pos_o, stream, version_o, type, schema, PyTuple_GET_ITEM(e, 3),
                                 PyTuple_GET_ITEM(e, 4), now, prev, hex, body};
        for (int k = 0; k < 11; k++) {
            Py_INCREF(evitems[k]);
            PyTuple_SET_ITEM(ev, k, evitems[k]);
        }
        PyObject *rowitems[10] = {pos_o, stream, version_o, type, schema, now, data_b, meta_b,
                                  hex, prev};
        for (int k = 0; k < 10; k++) {
            Py_INCREF(rowitems[k]);
            PyTuple_SET_ITEM(row, k, rowitems[k]);
        }
        Py_DECREF(pos_o);
        Py_DECREF(body);
        PyList_SET_ITEM(out, i, ev);
        PyList_SET_ITEM(rows, i, row);
        Py_SETREF(prev, hex);  /* our reference to hex becomes prev's */
    }
    Py_DECREF(prev);
    Py_XDECREF(shape);
    PyObject *result = PyTuple_Pack(2, out, rows);
    Py_DECREF(out);
    Py_DECREF(rows);
    return result;

error:
    Py_XDECREF(out);
    Py_XDECREF(rows);
    Py_XDECREF(prev);
    Py_XDECREF(shape);
    return NULL;
}

/* -- building an attrs instance without its generated __init__ --------------------------
 *
 * For a slotted attrs class whose __init__ would only store each argument in its slot
 * (no validators, converters, hooks or hash cache: schema.flat_loader decides), storing
 * the values directly gives the same object, several times faster.
 */
#include <structmember.h>

/* slot offsets of `names` in `type`, or -1 with TypeError */
static int
slot_offsets(PyTypeObject *type, PyObject *names, Py_ssize_t *offsets)
{
    if (type->tp_new != PyBaseObject_Type.tp_new || type->tp_itemsize != 0
        || type->tp_dictoffset != 0) {
        PyErr_SetString(PyExc_TypeError, "not a plain slotted class");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++) {
        PyObject *descr = _PyType_Lookup(type, PyTuple_GET_ITEM(names, i));
        if (descr == NULL || Py_TYPE(descr) != &PyMemberDescr_Type
            || ((PyMemberDescrObject *)descr)->d_member->type != T_OBJECT_EX
            || (((PyMemberDescrObject *)descr)->d_member->flags & READONLY)) {
            PyErr_SetString(PyExc_TypeError, "a name is not a writable slot");
            return -1;
        }
        offsets[i] = ((PyMemberDescrObject *)descr)->d_member->offset;
    }
    return 0;
}

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyTypeObject *cls;
    Py_ssize_t n;
    Py_ssize_t *offsets;  /* n of them */
} SlotMaker;

static void
maker_dealloc(SlotMaker *self)
{
    Py_XDECREF(self->cls);
    PyMem_Free(self->offsets);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
maker_call(SlotMaker *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != self->n || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_Format(PyExc_TypeError, "expected %zd positional arguments", self->n);
        return NULL;
    }
    PyObject *obj = self->cls->tp_alloc(self->cls, 0);
    if (obj == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyObject **slot = (PyObject **)((char *)obj + self->offsets[i]);
        Py_INCREF(args[i]);
        *slot = args[i];
    }
    return obj;
}

static PyTypeObject SlotMakerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cladelog.core._speedups.SlotMaker",
    .tp_basicsize = sizeof(SlotMaker),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_dealloc = (destructor)maker_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(SlotMaker, vectorcall),
    .tp_doc = "slot_maker(cls, names)(*values): an instance with each value in its slot.",
};

static PyObject *
slot_maker(PyObject *module, PyObject *args)
{
    PyObject *cls, *names;
    if (!PyArg_ParseTuple(args, "O!O!:slot_maker", &PyType_Type, &cls, &PyTuple_Type, &names))
        return NULL;
    PyTypeObject *type = (PyTypeObject *)cls;
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    SlotMaker *self = PyObject_New(SlotMaker, &SlotMakerType);
    if (self == NULL)
        return NULL;
    self->vectorcall = (vectorcallfunc)maker_call;
    self->cls = NULL;
    self->n = n;
    self->offsets = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n > 0 ? n : 1));
    if (self->offsets == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    if (slot_offsets(type, names, self->offsets) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    Py_INCREF(cls);
    self->cls = type;
    return (PyObject *)self;
}


/* -- a payload loader for flat classes ----------------------------------------------------
 *
 * flat_loader(cls, names, keys, order, kinds) -> loader; loader(d) -> instance or None.
 *
 * The loader schema.flat_loader generates in Python, for the classes whose fields are all
 * JSON scalars, lists of them or free JSON taken as is, and whose instances slot_maker can
 * build: the same checks (exact classes, finite floats, integers within 2**53 - 1 taken
 * as floats, lists copied) and None wherever the Python loader returns None. `names` are
 * the field names in field order, `keys` the same names in canonical (sorted) order,
 * `order[j]` the field index of keys[j], `kinds[i]` the field's kind: a leaf (KIND_*) plus
 * SHAPE_LIST for a list of that leaf, or KIND_ANY; plus OPTIONAL when None is allowed.
 */
enum { KIND_STR = 1, KIND_INT = 2, KIND_BOOL = 3, KIND_FLOAT = 4, KIND_ANY = 5,
       KIND_JSON_DICT = 6, KIND_JSON_LIST = 7, KIND_JSON_LIST_OF_DICTS = 8,  /* dumper only */
       SHAPE_LIST = 16, OPTIONAL = 32 };
#define MAX_SAFE_INTEGER 9007199254740991LL
#define MAX_FIELDS 64

/* What a compiled loader or encoder knows of its class: the fields (names in field order),
 * each field's slot offset and kind, and `order[j]`, the field index of the j-th name in
 * canonical (sorted) order. */
typedef struct {
    PyTypeObject *cls;
    PyObject *names;  /* tuple of str */
    Py_ssize_t n;
    Py_ssize_t order[MAX_FIELDS];
    Py_ssize_t offsets[MAX_FIELDS];
    int kinds[MAX_FIELDS];
} FlatSpec;

/* Fill `spec` from Python's description of the class; 0, or -1 with TypeError. A kind is a
 * leaf code up to `max_leaf`, with SHAPE_LIST (scalar leaves only) and OPTIONAL (not for
 * KIND_ANY). */
static int
spec_init(FlatSpec *spec, PyObject *cls, PyObject *names, PyObject *order, PyObject *kinds,
          int max_leaf, const char *what)
{
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    spec->cls = NULL;
    spec->names = NULL;
    spec->n = n;
    if (n > MAX_FIELDS || PyTuple_GET_SIZE(order) != n || PyTuple_GET_SIZE(kinds) != n) {
        PyErr_Format(PyExc_TypeError, "%s: names, order and kinds differ", what);
        return -1;
    }
    if (slot_offsets((PyTypeObject *)cls, names, spec->offsets) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyTuple_GET_ITEM(order, i), *k = PyTuple_GET_ITEM(kinds, i);
        Py_ssize_t oi = PyLong_Check(o) ? PyLong_AsSsize_t(o) : -1;
        long ki = PyLong_Check(k) ? PyLong_AsLong(k) : -1;
        int leaf = (int)(ki & 15);
        if (oi < 0 || oi >= n || ki < 0 || leaf < KIND_STR || leaf > max_leaf
            || (ki & ~(15 | SHAPE_LIST | OPTIONAL)) || (leaf >= KIND_ANY && (ki & SHAPE_LIST))
            || (leaf == KIND_ANY && (ki & OPTIONAL))
            || !PyUnicode_CheckExact(PyTuple_GET_ITEM(names, i))) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s: a bad order, kind or name", what);
            return -1;
        }
        spec->order[i] = oi;
        spec->kinds[i] = (int)ki;
    }
    Py_INCREF(cls);
    spec->cls = (PyTypeObject *)cls;
    Py_INCREF(names);
    spec->names = names;
    return 0;
}

static void
spec_copy(FlatSpec *to, const FlatSpec *from)
{
    memcpy(to, from, sizeof(FlatSpec));
    Py_XINCREF(to->cls);
    Py_XINCREF(to->names);
}

static void
spec_clear(FlatSpec *spec)
{
    Py_CLEAR(spec->cls);
    Py_CLEAR(spec->names);
}

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    FlatSpec spec;
    PyObject *keys;         /* tuple of str: the names in sorted order */
    PyObject *dict;         /* attributes (source, python) for reading and tests */
    PyObject *fallback;     /* called with d where the checks refuse it, or NULL: None */
} FlatLoader;

static void
loader_dealloc(FlatLoader *self)
{
    spec_clear(&self->spec);
    Py_XDECREF(self->keys);
    Py_XDECREF(self->dict);
    Py_XDECREF(self->fallback);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* a new reference to the checked leaf value (converted for floats), or NULL: refused */
static PyObject *
check_leaf(PyObject *v, int leaf)
{
    switch (leaf) {
    case KIND_STR:
        if (PyUnicode_CheckExact(v)) { Py_INCREF(v); return v; }
        return NULL;
    case KIND_INT:
        if (PyLong_CheckExact(v)) { Py_INCREF(v); return v; }
        return NULL;
    case KIND_BOOL:
        if (PyBool_Check(v)) { Py_INCREF(v); return v; }
        return NULL;
    case KIND_FLOAT:
        if (PyFloat_CheckExact(v)) {
            double x = PyFloat_AS_DOUBLE(v);
            if (x - x != 0.0)  /* NaN or infinite */
                return NULL;
            Py_INCREF(v);
            return v;
        }
        if (PyLong_CheckExact(v)) {
            int overflow = 0;
            long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (overflow || x > MAX_SAFE_INTEGER || x < -MAX_SAFE_INTEGER) {
                PyErr_Clear();
                return NULL;
            }
            return PyFloat_FromDouble((double)x);
        }
        return NULL;
    }
    return NULL;
}

static PyObject *
check_field(PyObject *v, int kind)
{
    if ((kind & OPTIONAL) && v == Py_None) {
        Py_INCREF(v);
        return v;
    }
    int leaf = kind & 15;
    if (leaf == KIND_ANY) {
        Py_INCREF(v);
        return v;
    }
    if (!(kind & SHAPE_LIST))
        return check_leaf(v, leaf);
    if (!PyList_CheckExact(v))
        return NULL;
    Py_ssize_t m = PyList_GET_SIZE(v);
    PyObject *copy = PyList_New(m);
    if (copy == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < m; k++) {
        PyObject *item = check_leaf(PyList_GET_ITEM(v, k), leaf);
        if (item == NULL) {
            Py_DECREF(copy);
            return NULL;
        }
        PyList_SET_ITEM(copy, k, item);
    }
    return copy;
}


static PyObject *loader_check(FlatLoader *self, PyObject *d);

static PyObject *
loader_call(FlatLoader *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "a loader takes one argument");
        return NULL;
    }
    PyObject *obj = loader_check(self, args[0]);
    if (obj != Py_None || self->fallback == NULL)
        return obj;
    Py_DECREF(obj);
    return PyObject_CallOneArg(self->fallback, args[0]);
}

/* the instance, or None where the checks refuse d (a new reference), or NULL: an error */
static PyObject *
loader_check(FlatLoader *self, PyObject *d)
{
    Py_ssize_t n = self->spec.n;
    if (!PyDict_CheckExact(d) || PyDict_GET_SIZE(d) != n)
        Py_RETURN_NONE;
    PyObject *values[MAX_FIELDS];  /* borrowed, field order */
    Py_ssize_t pos = 0, j = 0;
    PyObject *key, *value;
    int in_order = 1;
    while (PyDict_Next(d, &pos, &key, &value)) {
        if (!PyUnicode_CheckExact(key) || !same_str(key, PyTuple_GET_ITEM(self->keys, j))) {
            in_order = 0;
            break;
        }
        values[self->spec.order[j++]] = value;
    }
    if (!in_order) {  /* stored data is canonical (sorted); other dicts are looked up */
        for (Py_ssize_t i = 0; i < n; i++) {
            values[i] = PyDict_GetItemWithError(d, PyTuple_GET_ITEM(self->spec.names, i));
            if (values[i] == NULL) {
                if (PyErr_Occurred())
                    return NULL;
                Py_RETURN_NONE;
            }
        }
    }
    /* held while checking: an allocation may run a collection, and with it finalizers */
    for (Py_ssize_t i = 0; i < n; i++)
        Py_INCREF(values[i]);
    PyObject *checked[MAX_FIELDS];
    for (Py_ssize_t i = 0; i < n; i++) {
        checked[i] = check_field(values[i], self->spec.kinds[i]);
        if (checked[i] == NULL) {
            for (Py_ssize_t k = 0; k < i; k++)
                Py_DECREF(checked[k]);
            for (Py_ssize_t k = 0; k < n; k++)
                Py_DECREF(values[k]);
            if (PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_MemoryError))
                return NULL;
            PyErr_Clear();
            Py_RETURN_NONE;
        }
    }
    for (Py_ssize_t k = 0; k < n; k++)
        Py_DECREF(values[k]);
    PyObject *obj = self->spec.cls->tp_alloc(self->spec.cls, 0);
    if (obj == NULL) {
        for (Py_ssize_t k = 0; k < n; k++)
            Py_DECREF(checked[k]);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++)  /* the slots take our references */
        *(PyObject **)((char *)obj + self->spec.offsets[i]) = checked[i];
    return obj;
}

static PyTypeObject FlatLoaderType;

static PyObject *
loader_or_else(FlatLoader *self, PyObject *fallback)
{
    if (!PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "or_else: the fallback must be callable");
        return NULL;
    }
    FlatLoader *other = PyObject_New(FlatLoader, &FlatLoaderType);
    if (other == NULL)
        return NULL;
    other->vectorcall = (vectorcallfunc)loader_call;
    spec_copy(&other->spec, &self->spec);
    Py_INCREF(self->keys);
    other->keys = self->keys;
    other->dict = NULL;
    Py_INCREF(fallback);
    other->fallback = fallback;
    return (PyObject *)other;
}

static PyMethodDef loader_methods[] = {
    {"or_else", (PyCFunction)loader_or_else, METH_O,
     "or_else(fallback) -> the same loader, calling fallback(d) instead of returning None"},
    {NULL}
};

static PyTypeObject FlatLoaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cladelog.core._speedups.FlatLoader",
    .tp_basicsize = sizeof(FlatLoader),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_dealloc = (destructor)loader_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(FlatLoader, vectorcall),
    .tp_dictoffset = offsetof(FlatLoader, dict),
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
    .tp_methods = loader_methods,
    .tp_doc = "A compiled payload loader (see schema.flat_loader): loader(d) -> instance or None.",
};

static PyObject *
flat_loader(PyObject *module, PyObject *args)
{
    PyObject *cls, *names, *keys, *order, *kinds;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!:flat_loader", &PyType_Type, &cls, &PyTuple_Type,
                          &names, &PyTuple_Type, &keys, &PyTuple_Type, &order, &PyTuple_Type,
                          &kinds))
        return NULL;
    FlatLoader *self = PyObject_New(FlatLoader, &FlatLoaderType);
    if (self == NULL)
        return NULL;
    self->vectorcall = (vectorcallfunc)loader_call;
    self->keys = self->dict = self->fallback = NULL;
    if (spec_init(&self->spec, cls, names, order, kinds, KIND_ANY, "flat_loader") < 0) {
        Py_DECREF(self);
        return NULL;
    }
    Py_ssize_t n = self->spec.n;
    int ok = PyTuple_GET_SIZE(keys) == n;
    for (Py_ssize_t i = 0; ok && i < n; i++)
        ok = PyUnicode_CheckExact(PyTuple_GET_ITEM(keys, i));
    if (!ok) {
        Py_DECREF(self);
        PyErr_SetString(PyExc_TypeError, "flat_loader: keys must be the names, as strings");
        return NULL;
    }
    Py_INCREF(keys);
    self->keys = keys;
    return (PyObject *)self;
}

/* -- a payload encoder for flat classes ---------------------------------------------------
 *
 * flat_dumper(cls, names, order, kinds) -> dumper; dumper(obj) -> (json_object, bytes) or None.
 *
 * The encoder schema.flat_dumper generates in Python, for slotted classes whose fields are
 * JSON scalars, lists of them (optional or not) or free JSON: the object's members as a
 * JSON object (lists and dicts copied as the Python encoder copies them) and its canonical
 * JSON (RFC 8785) as UTF-8, or None wherever the Python encoder returns None (a value of
 * another class, an integer beyond 2**53 - 1, a float it does not format itself, a lone
 * surrogate) and where free JSON holds what canonical() below leaves to Python. `order`
 * lists the field indexes in the canonical (sorted) order of their names; `kinds` are the
 * loader's codes plus KIND_JSON_*.
 */
/* The decimal digits of x (snprintf's "%lld", several times faster); their count. */
static int
format_int(char *out, long long x)
{
    char tmp[24];
    unsigned long long u = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
    int n = 0;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    int len = 0;
    if (x < 0)
        out[len++] = '-';
    while (n)
        out[len++] = tmp[--n];
    return len;
}

/* 1: written; 0: not a value this encoder writes (the Python one steps aside); -1: error */
static int
out_leaf(Out *o, PyObject *v, int leaf)
{
    char num[32];
    switch (leaf) {
    case KIND_STR:
        if (!PyUnicode_CheckExact(v))
            return 0;
        if (out_string(o, v) < 0) {
            if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
                PyErr_Clear();
                return 0;
            }
            return -1;
        }
        return 1;
    case KIND_BOOL:
        if (v == Py_True)
            return out_put(o, "true", 4) < 0 ? -1 : 1;
        if (v == Py_False)
            return out_put(o, "false", 5) < 0 ? -1 : 1;
        return 0;
    case KIND_INT:
    case KIND_FLOAT:
        if (PyLong_CheckExact(v)) {
            int overflow = 0;
            long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (overflow || x > MAX_SAFE_INTEGER || x < -MAX_SAFE_INTEGER) {
                PyErr_Clear();
                return 0;
            }
            int n = format_int(num, x);
            return out_put(o, num, n) < 0 ? -1 : 1;
        }
        if (leaf == KIND_INT || !PyFloat_CheckExact(v))
            return 0;
        double x = PyFloat_AS_DOUBLE(v);
        if (x - x != 0.0)  /* NaN, infinite */
            return 0;
        double a = x < 0 ? -x : x;
        if (a > (double)MAX_SAFE_INTEGER)  /* integral, beyond 2**53 - 1: the general path */
            return 0;
        if (x == (double)(long long)x) {  /* integral: written as that integer */
            int n = format_int(num, (long long)x);
            return out_put(o, num, n) < 0 ? -1 : 1;
        }
        if (!(a >= 1e-4 && a < 1e16))
            return 0;
        char *r = PyOS_double_to_string(x, 'r', 0, 0, NULL);  /* repr(): fixed notation here */
        if (r == NULL)
            return -1;
        int rc = out_put(o, r, (Py_ssize_t)strlen(r));
        PyMem_Free(r);
        return rc < 0 ? -1 : 1;
    }
    return 0;
}

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    FlatSpec spec;
    PyObject *heads;        /* tuple of bytes: '"name":' (',' before all but the first), sorted */
    PyObject *dict;
} FlatDumper;

static void
dumper_dealloc(FlatDumper *self)
{
    spec_clear(&self->spec);
    Py_XDECREF(self->heads);
    Py_XDECREF(self->dict);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int canon_value(Out *o, PyObject *v, int depth);
static int canon_dict(Out *o, PyObject *v, Py_ssize_t n, int depth);

static PyObject *
dumper_call(FlatDumper *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "a dumper takes one argument");
        return NULL;
    }
    PyObject *obj = args[0];
    if (Py_TYPE(obj) != self->spec.cls)
        Py_RETURN_NONE;
    Py_ssize_t n = self->spec.n;
    PyObject *values[MAX_FIELDS];  /* new references: the JSON object's members */
    Py_ssize_t got = 0;
    Out o = {NULL, 0, 0};
    PyObject *result = NULL;
    for (; got < n; got++) {  /* read every slot, copying lists and dicts */
        PyObject *v = *(PyObject **)((char *)obj + self->spec.offsets[got]);
        int kind = self->spec.kinds[got], leaf = kind & 15;
        if (v == NULL)
            goto aside;  /* an unset attribute: the general path reports it */
        if ((kind & OPTIONAL) && v == Py_None) {
            Py_INCREF(v);
        } else if (kind & SHAPE_LIST) {
            if (!PyList_CheckExact(v))
                goto aside;
            v = PyList_GetSlice(v, 0, PyList_GET_SIZE(v));
        } else if (leaf == KIND_JSON_DICT) {
            if (!PyDict_CheckExact(v))
                goto aside;
            v = PyDict_Copy(v);
        } else if (leaf == KIND_JSON_LIST || leaf == KIND_JSON_LIST_OF_DICTS) {
            if (!PyList_CheckExact(v) && !PyTuple_CheckExact(v))
                goto aside;
            Py_ssize_t m = PySequence_Fast_GET_SIZE(v);
            for (Py_ssize_t k = 0; leaf == KIND_JSON_LIST_OF_DICTS && k < m; k++)
                if (!PyDict_CheckExact(PySequence_Fast_GET_ITEM(v, k)))
                    goto aside;
            v = PySequence_List(v);
        } else {
            Py_INCREF(v);
        }
        if (v == NULL)
            goto error;
        values[got] = v;
    }
    if (out_put(&o, "{", 1) < 0)
        goto error;
    for (Py_ssize_t j = 0; j < n; j++) {
        Py_ssize_t i = self->spec.order[j];
        PyObject *v = values[i], *head = PyTuple_GET_ITEM(self->heads, j);
        int kind = self->spec.kinds[i], leaf = kind & 15;
        if (out_put(&o, PyBytes_AS_STRING(head), PyBytes_GET_SIZE(head)) < 0)
            goto error;
        if ((kind & OPTIONAL) && v == Py_None) {
            if (out_put(&o, "null", 4) < 0)
                goto error;
            continue;
        }
        if (leaf >= KIND_ANY) {  /* free JSON: its canonical form, or the general path */
            int rc = canon_value(&o, v, 0);
            if (rc < 0)
                goto error;
            if (rc == 0)
                goto aside;
            continue;
        }
        if (!(kind & SHAPE_LIST)) {
            int rc = out_leaf(&o, v, leaf);
            if (rc < 0)
                goto error;
            if (rc == 0)
                goto aside;
            continue;
        }
        if (out_put(&o, "[", 1) < 0)
            goto error;
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(v); k++) {
            if (k && out_put(&o, ",", 1) < 0)
                goto error;
            int rc = out_leaf(&o, PyList_GET_ITEM(v, k), leaf);
            if (rc < 0)
                goto error;
            if (rc == 0)
                goto aside;
        }
        if (out_put(&o, "]", 1) < 0)
            goto error;
    }
    if (out_put(&o, "}", 1) < 0)
        goto error;
    PyObject *d = _PyDict_NewPresized(n);
    if (d == NULL)
        goto error;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyDict_SetItem(d, PyTuple_GET_ITEM(self->spec.names, i), values[i]) < 0) {
            Py_DECREF(d);
            goto error;
        }
    }
    PyObject *text = PyBytes_FromStringAndSize(o.buf, o.len);
    if (text == NULL) {
        Py_DECREF(d);
        goto error;
    }
    result = PyTuple_Pack(2, d, text);
    Py_DECREF(d);
    Py_DECREF(text);
    goto done;
aside:
    result = Py_None;
    Py_INCREF(result);
    goto done;
error:
    result = NULL;
done:
    for (Py_ssize_t k = 0; k < got; k++)
        Py_DECREF(values[k]);
    PyMem_Free(o.buf);
    return result;
}

static PyTypeObject FlatDumperType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cladelog.core._speedups.FlatDumper",
    .tp_basicsize = sizeof(FlatDumper),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_dealloc = (destructor)dumper_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(FlatDumper, vectorcall),
    .tp_dictoffset = offsetof(FlatDumper, dict),
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
    .tp_doc = "A compiled payload encoder (see schema.flat_dumper): dumper(obj) -> (dict, bytes) or None.",
};

static PyObject *
flat_dumper(PyObject *module, PyObject *args)
{
    PyObject *cls, *names, *order, *kinds;
    if (!PyArg_ParseTuple(args, "O!O!O!O!:flat_dumper", &PyType_Type, &cls, &PyTuple_Type,
                          &names, &PyTuple_Type, &order, &PyTuple_Type, &kinds))
        return NULL;
    FlatDumper *self = PyObject_New(FlatDumper, &FlatDumperType);
    if (self == NULL)
        return NULL;
    self->vectorcall = (vectorcallfunc)dumper_call;
    self->heads = self->dict = NULL;
    if (spec_init(&self->spec, cls, names, order, kinds, KIND_JSON_LIST_OF_DICTS,
                  "flat_dumper") < 0) {
        Py_DECREF(self);
        return NULL;
    }
    Py_ssize_t n = self->spec.n;
    self->heads = PyTuple_New(n);
    if (self->heads == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    for (Py_ssize_t j = 0; j < n; j++) {  /* '"name":' in sorted order, ',' between */
        PyObject *name = PyTuple_GET_ITEM(names, self->spec.order[j]);
        Py_ssize_t len;
        const char *u = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &len) : NULL;
        if (u == NULL || !PyUnicode_IS_ASCII(name)) {
            PyErr_Clear();
            Py_DECREF(self);
            PyErr_SetString(PyExc_TypeError, "flat_dumper: names must be ASCII strings");
            return NULL;
        }
        Out o = {NULL, 0, 0};
        if ((j && out_put(&o, ",", 1) < 0) || out_string(&o, name) < 0
            || out_put(&o, ":", 1) < 0) {
            PyMem_Free(o.buf);
            Py_DECREF(self);
            return NULL;
        }
        PyObject *head = PyBytes_FromStringAndSize(o.buf, o.len);
        PyMem_Free(o.buf);
        if (head == NULL) {
            Py_DECREF(self);
            return NULL;
        }
        PyTuple_SET_ITEM(self->heads, j, head);
    }
    return (PyObject *)self;
}


/* -- canonical JSON (RFC 8785) of plain values ------------------------------------------------
 *
 * canonical(value) -> bytes or None: what cladelog.core.canonical.canonical_bytes returns,
 * for values made of exact dicts (string keys within the Basic Multilingual Plane, where
 * code-point order is UTF-16 order), lists, tuples, strings, integers within 2**53 - 1,
 * floats that are integral below 2**53 or non-integral in [1e-4, 1e16), booleans and None,
 * nested at most MAX_DEPTH levels. None for anything else (the Python encoder then
 * formats it or names what is wrong): other floats, subclasses, other types, a lone
 * surrogate.
 */
#define MAX_DEPTH 64

static int
canon_value(Out *o, PyObject *v, int depth)
{
    if (v == Py_None)
        return out_put(o, "null", 4) < 0 ? -1 : 1;
    if (v == Py_True)
        return out_put(o, "true", 4) < 0 ? -1 : 1;
    if (v == Py_False)
        return out_put(o, "false", 5) < 0 ? -1 : 1;
    if (PyUnicode_CheckExact(v))
        return out_leaf(o, v, KIND_STR);
    if (PyLong_CheckExact(v))
        return out_leaf(o, v, KIND_INT);
    if (PyFloat_CheckExact(v))
        return out_leaf(o, v, KIND_FLOAT);
    int is_list = PyList_CheckExact(v), is_tuple = PyTuple_CheckExact(v);
    if (is_list || is_tuple) {
        Py_ssize_t n = is_list ? PyList_GET_SIZE(v) : PyTuple_GET_SIZE(v);
        if (n && depth >= MAX_DEPTH)
            return 0;
        if (out_put(o, "[", 1) < 0)
            return -1;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (i && out_put(o, ",", 1) < 0)
                return -1;
            PyObject *item = is_list ? PyList_GET_ITEM(v, i) : PyTuple_GET_ITEM(v, i);
            Py_INCREF(item);  /* a list may lose it to a finalizer run by an allocation */
            int rc = canon_value(o, item, depth + 1);
            Py_DECREF(item);
            if (rc <= 0)
                return rc;
        }
        return out_put(o, "]", 1) < 0 ? -1 : 1;
    }
    if (!PyDict_CheckExact(v))
        return 0;
    Py_ssize_t n = PyDict_GET_SIZE(v);
    if (n && depth >= MAX_DEPTH)
        return 0;
    return canon_dict(o, v, n, depth);
}

/* The members of a dict in canonical order. Their keys are sorted once per key sequence:
 * dicts of one kind (the facts of many objects, say) usually hold the same interned keys
 * in the same insertion order, so the order found for the last such dict is kept (with
 * references to its keys, so that no other string can take their place) and reused. */
typedef struct {
    PyObject *key;
    Py_ssize_t at;
} Member;

#define ORDER_CACHE 64
static PyObject *order_keys[ORDER_CACHE];
static Py_ssize_t order_at[ORDER_CACHE];
static Py_ssize_t order_n = -1;

static int
member_cmp(const void *a, const void *b)
{
    PyObject *x = ((const Member *)a)->key, *y = ((const Member *)b)->key;
    if (PyUnicode_KIND(x) == PyUnicode_1BYTE_KIND && PyUnicode_KIND(y) == PyUnicode_1BYTE_KIND) {
        Py_ssize_t lx = PyUnicode_GET_LENGTH(x), ly = PyUnicode_GET_LENGTH(y);
        int c = memcmp(PyUnicode_1BYTE_DATA(x), PyUnicode_1BYTE_DATA(y),
                       (size_t)(lx < ly ? lx : ly));
        return c ? c : (lx > ly) - (lx < ly);
    }
    return PyUnicode_Compare(x, y);  /* code-point order: UTF-16 order within the BMP */
}

static int
canon_dict(Out *o, PyObject *v, Py_ssize_t n, int depth)
{
    /* a snapshot of the members (references held), in insertion order */
    Member local[ORDER_CACHE];
    PyObject *local_values[ORDER_CACHE];
    Member *members = n <= ORDER_CACHE ? local : PyMem_Malloc(sizeof(Member) * (size_t)n);
    PyObject **values = n <= ORDER_CACHE ? local_values
                                         : PyMem_Malloc(sizeof(PyObject *) * (size_t)n);
    if (members == NULL || values == NULL) {
        if (members != local)
            PyMem_Free(members);
        if (values != local_values)
            PyMem_Free(values);
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t pos = 0, i = 0, held = 0;
    PyObject *key, *value;
    int rc = 1;
    while (i < n && PyDict_Next(v, &pos, &key, &value)) {
        Py_INCREF(key);
        Py_INCREF(value);
        members[i].key = key;
        members[i].at = i;
        values[i] = value;
        held = ++i;
        if (!PyUnicode_CheckExact(key) || PyUnicode_KIND(key) == PyUnicode_4BYTE_KIND) {
            rc = 0;  /* not a string, or maybe beyond the BMP: UTF-16 order differs */
            goto done;
        }
    }
    if (i != n) {
        rc = 0;  /* changed while read: the Python encoder decides */
        goto done;
    }
    int cached = n == order_n;
    for (Py_ssize_t j = 0; cached && j < n; j++)
        cached = members[j].key == order_keys[j];
    if (cached) {
        for (Py_ssize_t j = 0; j < n; j++) {
            members[j].key = order_keys[order_at[j]];
            members[j].at = order_at[j];
        }
    }
    else {
        qsort(members, (size_t)n, sizeof(Member), member_cmp);  /* keys are distinct */
        if (n <= ORDER_CACHE) {
            for (Py_ssize_t j = 0; j < order_n; j++)
                Py_DECREF(order_keys[j]);
            for (Py_ssize_t j = 0; j < n; j++) {
                order_at[j] = members[j].at;
                order_keys[members[j].at] = members[j].key;
                Py_INCREF(members[j].key);
            }
            order_n = n;
        }
    }
    if (out_put(o, "{", 1) < 0) {
        rc = -1;
        goto done;
    }
    for (Py_ssize_t j = 0; j < n; j++) {
        if ((j && out_put(o, ",", 1) < 0)) {
            rc = -1;
            goto done;
        }
        rc = out_leaf(o, members[j].key, KIND_STR);
        if (rc <= 0)
            goto done;
        if (out_put(o, ":", 1) < 0) {
            rc = -1;
            goto done;
        }
        rc = canon_value(o, values[members[j].at], depth + 1);
        if (rc <= 0)
            goto done;
    }
    rc = out_put(o, "}", 1) < 0 ? -1 : 1;
done:
    /* members may be sorted: release each key and value by its insertion index */
    for (Py_ssize_t j = 0; j < held; j++)
        Py_DECREF(values[j]);
    {
        PyObject *keys_local[ORDER_CACHE];
        PyObject **keys = held <= ORDER_CACHE ? keys_local
                                              : PyMem_Malloc(sizeof(PyObject *) * (size_t)held);
        if (keys != NULL) {
            for (Py_ssize_t j = 0; j < held; j++)
                keys[members[j].at] = members[j].key;
            for (Py_ssize_t j = 0; j < held; j++)
                Py_DECREF(keys[j]);
            if (keys != keys_local)
                PyMem_Free(keys);
        }
    }
    if (members != local)
        PyMem_Free(members);
    if (values != local_values)
        PyMem_Free(values);
    return rc;
}

static PyObject *
canonical(PyObject *module, PyObject *value)
{
    Out o = {NULL, 0, 0};
    int rc = canon_value(&o, value, 0);
    PyObject *result = NULL;
    if (rc > 0)
        result = PyBytes_FromStringAndSize(o.buf, o.len);
    else if (rc == 0) {
        result = Py_None;
        Py_INCREF(result);
    }
    PyMem_Free(o.buf);
    return result;
}

static PyMethodDef methods[] = {
    {"canonical", canonical, METH_O,
     "canonical(value) -> canonical JSON bytes (RFC 8785), or None: the Python encoder decides"},
    {"flat_dumper", flat_dumper, METH_VARARGS,
     "flat_dumper(cls, names, order, kinds) -> dumper(obj) -> (dict, bytes) or None"},
    {"flat_loader", flat_loader, METH_VARARGS,
     "flat_loader(cls, names, keys, order, kinds) -> loader(d) -> instance or None"},
    {"build_rows", build_rows, METH_VARARGS,
     "build_rows(events, parts, position, prev_hash, prev_raw, versions, shapes, shape_cb, "
     "recorded_at, event_type, sha256) -> (events, rows) or None"},
    {"slot_maker", slot_maker, METH_VARARGS,
     "slot_maker(cls, names) -> callable storing its positional arguments in those slots"},
    {"verify_rows", verify_rows, METH_VARARGS,
     "verify_rows(rows, shapes, shape_cb, meta_cb, scan, sha256, event_type, "
     "position, prev_hash, prev_raw) -> iterator of events"},
    {NULL}
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "cladelog.core._speedups",
    "Compiled replay loop (optional; the pure-Python path is the reference).", -1, methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    if (PyType_Ready(&VerifyIterType) < 0 || PyType_Ready(&SlotMakerType) < 0
        || PyType_Ready(&FlatLoaderType) < 0 || PyType_Ready(&FlatDumperType) < 0)
        return NULL;
    /* hashlib first, so that the libcrypto it uses is loaded; only a loaded one is used */
    PyObject *hashlib = PyImport_ImportModule("hashlib");
    if (hashlib == NULL)
        return NULL;
    Py_DECREF(hashlib);
    const char *names[] = {"libcrypto.so.3", "libcrypto.so.1.1", "libcrypto.so", NULL};
    for (int i = 0; names[i] != NULL && openssl_sha256 == NULL; i++) {
        void *lib = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD);
        if (lib != NULL)
            openssl_sha256 = (sha256_fn)dlsym(lib, "SHA256");
    }
    digest_name = PyUnicode_InternFromString("digest");
    if (digest_name == NULL)
        return NULL;
    return PyModule_Create(&moduledef);
}
