/* Optional compiled step of the replay fold: apply a run of columnar records of a packed
 * event (see fold.py), as fold.apply_run_py does in Python.
 *
 * apply_run_py stays the reference: this function has the same arguments, the same
 * result and the same effects on the engine's dicts, and raises where it raises (the
 * exception types, which the fold turns into Unfoldable, not always the same message).
 * Whatever is not a plain case here (a value compared with a container, a segment's link
 * key, a missing object) calls the very Python callables the reference calls.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>
#include <structmember.h>

static PyObject *s_facts, *s_mapped, *s_kind, *s_name, *s_id, *s_rev, *s_push, *s_segment,
    *s_origin, *s_target, *s_shared;

/* js_same(old, new) for the plain cases; the Python function for containers.
 * 1 same, 0 not, -1 error. */
static int
same(PyObject *js_same, PyObject *a, PyObject *b)
{
    if (a == b)
        return 1;
    PyTypeObject *ta = Py_TYPE(a), *tb = Py_TYPE(b);
    int na = ta == &PyLong_Type || ta == &PyFloat_Type;
    int nb = tb == &PyLong_Type || tb == &PyFloat_Type;
    if (na && nb)
        return PyObject_RichCompareBool(a, b, Py_EQ);
    if (ta != tb)
        return 0;
    if (ta == &PyUnicode_Type)
        return PyUnicode_Compare(a, b) == 0 ? 1 : (PyErr_Occurred() ? -1 : 0);
    if (ta == &PyList_Type || ta == &PyDict_Type) {
        PyObject *r = PyObject_CallFunctionObjArgs(js_same, a, b, NULL);
        if (r == NULL)
            return -1;
        int t = PyObject_IsTrue(r);
        Py_DECREF(r);
        return t;
    }
    return PyObject_RichCompareBool(a, b, Py_EQ);
}

/* The value a write stores: a {"__push": x} appends x to a copy of the old list (or starts
 * one); anything else is itself. New reference. */
static PyObject *
written(PyObject *old, PyObject *value)
{
    if (PyDict_CheckExact(value)) {
        PyObject *item = PyDict_GetItemWithError(value, s_push);
        if (item != NULL) {
            Py_ssize_t n = old != NULL && PyList_CheckExact(old) ? PyList_GET_SIZE(old) : 0;
            PyObject *list = PyList_New(n + 1);
            if (list == NULL)
                return NULL;
            for (Py_ssize_t i = 0; i < n; i++) {
                PyObject *x = PyList_GET_ITEM(old, i);
                Py_INCREF(x);
                PyList_SET_ITEM(list, i, x);
            }
            Py_INCREF(item);
            PyList_SET_ITEM(list, n, item);
            return list;
        }
        if (PyErr_Occurred())
            return NULL;
    }
    Py_INCREF(value);
    return value;
}

static int
fail(PyObject *type, const char *message)
{
    PyErr_SetString(type, message);
    return -1;
}

/* An attribute stored in a slot (GraphObject's facts, mapped, kind), read from its offset
 * once the type is known to keep it there; any other object goes through getattr. A
 * cache lives for one call (no type can change under it then). New reference. */
typedef struct {
    PyTypeObject *type;
    Py_ssize_t offset;
} Slot;

static PyObject *
get_slot(PyObject *obj, PyObject *name, Slot *cache)
{
    if (Py_TYPE(obj) == cache->type) {
        PyObject *value = *(PyObject **)((char *)obj + cache->offset);
        if (value != NULL) {
            Py_INCREF(value);
            return value;
        }
    }
    else if (cache->type == NULL) {
        PyObject *descr = _PyType_Lookup(Py_TYPE(obj), name);  /* borrowed */
        if (descr != NULL && Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
            PyMemberDef *def = ((PyMemberDescrObject *)descr)->d_member;
            if (def->type == T_OBJECT_EX && !(def->flags & READ_RESTRICTED)) {
                cache->type = Py_TYPE(obj);
                cache->offset = def->offset;
            }
        }
    }
    return PyObject_GetAttr(obj, name);
}

/* obj.facts, ready to be changed (a new reference; NULL with an exception): objects.own_facts,
 * which copies them first while a settle snapshot holds them (obj.shared). */
static PyObject *
own_facts(PyObject *obj, Slot *facts_slot, Slot *shared_slot)
{
    PyObject *shared = get_slot(obj, s_shared, shared_slot);
    if (shared == NULL)
        return NULL;
    int t = shared == Py_None ? 0 : PyObject_IsTrue(shared);
    Py_DECREF(shared);
    if (t < 0)
        return NULL;
    PyObject *facts = get_slot(obj, s_facts, facts_slot);
    if (facts == NULL || !t)
        return facts;
    if (!PyDict_CheckExact(facts)) {
        Py_DECREF(facts);
        PyErr_SetString(PyExc_TypeError, "an object's facts must be a dict");
        return NULL;
    }
    PyObject *copy = PyDict_Copy(facts);
    Py_DECREF(facts);
    if (copy == NULL || PyObject_SetAttr(obj, s_facts, copy) < 0
        || PyObject_SetAttr(obj, s_shared, Py_None) < 0) {
        Py_XDECREF(copy);
        return NULL;
    }
    return copy;
}

/* The writes of one mutation (`n` keys and values) to `obj` (id `oid`), whose facts are
 * `facts`: fold.apply_run_py's inner loop. */
static int
write_all(PyObject *const *ctx, PyObject **keys, PyObject **values, Py_ssize_t n,
          PyObject *obj, PyObject *oid, PyObject *facts, int *changed, Slot *kinds)
{
    PyObject *index = ctx[1], *relink = ctx[4], *js_same = ctx[5], *undefined = ctx[6];
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *key = keys[i], *value = values[i];
        if (!PyUnicode_CheckExact(key))
            return fail(PyExc_TypeError, "columns: a key that is not a string");
        PyObject *old = PyDict_GetItemWithError(facts, key);  /* borrowed */
        if (old == NULL && PyErr_Occurred())
            return -1;
        Py_XINCREF(old);
        PyObject *new = written(old, value);
        if (new == NULL) {
            Py_XDECREF(old);
            return -1;
        }
        Py_INCREF(key);
        if (old == NULL) {
            PyUnicode_InternInPlace(&key);  /* one string per key for all objects */
            PyObject *bucket = PyDict_GetItemWithError(index, key);
            if (bucket == NULL) {
                if (PyErr_Occurred())
                    goto error;
                bucket = PyDict_New();
                if (bucket == NULL)
                    goto error;
                int ok = PyDict_SetItem(index, key, bucket);
                Py_DECREF(bucket);  /* the index holds it */
                if (ok < 0)
                    goto error;
            }
            if (PyDict_SetItem(bucket, oid, Py_None) < 0)
                goto error;
        }
        else {
            int t = same(js_same, old, new);
            if (t < 0)
                goto error;
            if (t) {  /* an identical write is a no-op (SPEC §0-16) */
                Py_DECREF(old);
                Py_DECREF(new);
                Py_DECREF(key);
                continue;
            }
        }
        if (PyDict_SetItem(facts, key, new) < 0)
            goto error;
        *changed = 1;
        if (PyUnicode_Compare(key, s_origin) == 0 || PyUnicode_Compare(key, s_target) == 0) {
            PyObject *kind = get_slot(obj, s_kind, kinds);
            if (kind == NULL)
                goto error;
            int seg = PyObject_RichCompareBool(kind, s_segment, Py_EQ);
            Py_DECREF(kind);
            if (seg < 0)
                goto error;
            if (seg) {
                PyObject *r = PyObject_CallFunctionObjArgs(
                    relink, obj, key, old != NULL ? old : undefined, new, NULL);
                if (r == NULL)
                    goto error;
                Py_DECREF(r);
            }
        }
        Py_XDECREF(old);
        Py_DECREF(new);
        Py_DECREF(key);
        continue;
    error:
        Py_XDECREF(old);
        Py_DECREF(new);
        Py_DECREF(key);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ the parsed columns */

/* The columns of one packed event, parsed from their JSON text straight into arrays: the
 * keys and concepts as interned strings (one per distinct name), the counts as C
 * integers. Only the fast cases are parsed here (an ASCII text, plain strings, integers,
 * true/false/null); any other value is parsed by the json module's scanner, so the values
 * are those json.loads gives. Columns that do not agree with each other (what
 * events.packed_columns refuses) raise ValueError, and the caller parses them in Python. */
typedef struct {
    PyObject_HEAD
    PyObject *order;     /* str of m / c / o */
    PyObject *other;     /* list of [type, data] */
    PyObject **rev, **id, **k, **v, **cast;  /* owned references */
    Py_ssize_t *n, *write;
    Py_ssize_t nrev, nid, nk, nv, ncast, nn, nwrite;
} Columns;

typedef struct {
    const Py_UCS1 *s;
    Py_ssize_t pos, len;
    PyObject *text, *scan;
    PyObject *names[256];  /* a cache of interned names, by a hash of their bytes */
} Parser;

/* Raised (as ValueError) for any text the fast parser leaves to Python. */
static int
slow(void)
{
    if (!PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "columns: left to the Python parser");
    return -1;
}

static void
skip_ws(Parser *p)
{
    while (p->pos < p->len) {
        Py_UCS1 ch = p->s[p->pos];
        if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r')
            break;
        p->pos++;
    }
}

static int
expect(Parser *p, char ch)
{
    skip_ws(p);
    if (p->pos >= p->len || p->s[p->pos] != (Py_UCS1)ch)
        return slow();
    p->pos++;
    return 0;
}

/* Any JSON value at the current position, by the json module's scanner. New reference. */
static PyObject *
scan_value(Parser *p)
{
    PyObject *r = PyObject_CallFunction(p->scan, "On", p->text, p->pos);
    if (r == NULL) {
        PyErr_Clear();
        slow();
        return NULL;
    }
    PyObject *value = NULL;
    Py_ssize_t end;
    if (PyTuple_Check(r) && PyTuple_GET_SIZE(r) == 2
        && (end = PyLong_AsSsize_t(PyTuple_GET_ITEM(r, 1))) > p->pos && end <= p->len) {
        value = PyTuple_GET_ITEM(r, 0);
        Py_INCREF(value);
        p->pos = end;
    }
    else {
        PyErr_Clear();
        slow();
    }
    Py_DECREF(r);
    return value;
}

/* A plain string token (no escapes): its bounds, or 0 when the token is not one. */
static int
plain_string(Parser *p, Py_ssize_t *start, Py_ssize_t *end)
{
    if (p->pos >= p->len || p->s[p->pos] != '"')
        return 0;
    for (Py_ssize_t i = p->pos + 1; i < p->len; i++) {
        Py_UCS1 ch = p->s[i];
        if (ch == '"') {
            *start = p->pos + 1;
            *end = i;
            return 1;
        }
        if (ch == '\\' || ch < 0x20)
            return 0;
    }
    return 0;
}

/* A name (a fact key or a concept id): interned, shared by all its occurrences. */
static PyObject *
parse_name(Parser *p)
{
    skip_ws(p);
    Py_ssize_t a, b;
    if (!plain_string(p, &a, &b)) {
        PyObject *value = scan_value(p);
        if (value != NULL && PyUnicode_CheckExact(value))
            PyUnicode_InternInPlace(&value);
        return value;
    }
    Py_ssize_t len = b - a;
    unsigned h = (unsigned)len * 31u;
    for (Py_ssize_t i = a; i < b; i++)
        h = h * 33u + p->s[i];
    PyObject **slot = &p->names[h & 255u];
    PyObject *name = *slot;
    if (name == NULL || PyUnicode_GET_LENGTH(name) != len || PyUnicode_KIND(name) != PyUnicode_1BYTE_KIND
        || memcmp(PyUnicode_1BYTE_DATA(name), p->s + a, (size_t)len) != 0) {
        name = PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, p->s + a, len);
        if (name == NULL)
            return NULL;
        PyUnicode_InternInPlace(&name);
        Py_XSETREF(*slot, name);
    }
    p->pos = b + 1;
    Py_INCREF(name);
    return name;
}

/* An integer token of at most 18 digits into *out; 0 when the token is anything else. */
static int
small_int(Parser *p, long long *out, Py_ssize_t *end)
{
    Py_ssize_t i = p->pos;
    int neg = 0;
    if (i < p->len && p->s[i] == '-') {
        neg = 1;
        i++;
    }
    Py_ssize_t first = i;
    long long v = 0;
    while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9' && i - first < 18)
        v = v * 10 + (p->s[i++] - '0');
    Py_ssize_t digits = i - first;
    if (digits == 0 || (digits > 1 && p->s[first] == '0'))
        return 0;
    if (i < p->len) {
        Py_UCS1 ch = p->s[i];
        if ((ch >= '0' && ch <= '9') || ch == '.' || ch == 'e' || ch == 'E')
            return 0;
    }
    *out = neg ? -v : v;
    *end = i;
    return 1;
}

/* Any value; the plain cases without the scanner. New reference. */
static PyObject *
parse_value(Parser *p, int intern)
{
    skip_ws(p);
    if (p->pos >= p->len)
        return slow(), NULL;
    Py_UCS1 ch = p->s[p->pos];
    Py_ssize_t a, b;
    long long v;
    if (ch == '"') {
        if (intern)
            return parse_name(p);
        if (plain_string(p, &a, &b)) {
            p->pos = b + 1;
            return PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, p->s + a, b - a);
        }
    }
    else if ((ch == '-' || (ch >= '0' && ch <= '9')) && small_int(p, &v, &b)) {
        p->pos = b;
        return PyLong_FromLongLong(v);
    }
    else if (ch == 't' && p->len - p->pos >= 4 && memcmp(p->s + p->pos, "true", 4) == 0) {
        p->pos += 4;
        Py_RETURN_TRUE;
    }
    else if (ch == 'f' && p->len - p->pos >= 5 && memcmp(p->s + p->pos, "false", 5) == 0) {
        p->pos += 5;
        Py_RETURN_FALSE;
    }
    else if (ch == 'n' && p->len - p->pos >= 4 && memcmp(p->s + p->pos, "null", 4) == 0) {
        p->pos += 4;
        Py_RETURN_NONE;
    }
    return scan_value(p);
}

/* Parses one array element into *slot (a PyObject * or a Py_ssize_t); -1 on error. */
typedef int (*parse_item)(Parser *p, void *slot, int intern);

/* A JSON array into a new C array of `size`-byte items, each parsed by `item`. The array
 * is handed out through *out at once, and *count says how many items are set, also after
 * an error: the caller frees them. */
static int
parse_array(Parser *p, void **out, Py_ssize_t *count, size_t size, parse_item item,
            int intern)
{
    if (expect(p, '[') < 0)
        return -1;
    Py_ssize_t cap = 64, n = 0;
    char *items = PyMem_Malloc(size * (size_t)cap);
    if (items == NULL)
        return PyErr_NoMemory(), -1;
    *out = items;
    *count = 0;
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == ']') {
        p->pos++;
        return 0;
    }
    for (;;) {
        if (n == cap) {
            cap *= 2;
            char *grown = PyMem_Realloc(items, size * (size_t)cap);
            if (grown == NULL)
                return PyErr_NoMemory(), -1;
            *out = items = grown;
        }
        if (item(p, items + size * (size_t)n, intern) < 0)
            return -1;
        *count = ++n;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        return expect(p, ']');
    }
}

/* Any value, an owned reference (a name, interned, when `intern`). */
static int
value_item(Parser *p, void *slot, int intern)
{
    PyObject *value = parse_value(p, intern);
    if (value == NULL)
        return -1;
    if (intern && !PyUnicode_CheckExact(value)) {  /* names are strings */
        Py_DECREF(value);
        return slow();
    }
    *(PyObject **)slot = value;
    return 0;
}

/* A count: a plain non-negative integer, or the text is left to Python. */
static int
count_item(Parser *p, void *slot, int intern)
{
    skip_ws(p);
    long long v;
    Py_ssize_t end;
    if (!small_int(p, &v, &end) || v < 0)
        return slow();
    p->pos = end;
    *(Py_ssize_t *)slot = (Py_ssize_t)v;
    return 0;
}

/* An array of values into a new C array of owned references. */
static int
parse_values(Parser *p, PyObject ***out, Py_ssize_t *count, int intern)
{
    void *items = NULL;
    int r = parse_array(p, &items, count, sizeof(PyObject *), value_item, intern);
    *out = items;
    return r;
}

/* An array of counts into a new C array. */
static int
parse_counts(Parser *p, Py_ssize_t **out, Py_ssize_t *count)
{
    void *items = NULL;
    int r = parse_array(p, &items, count, sizeof(Py_ssize_t), count_item, 0);
    *out = items;
    return r;
}

/* Drops the references of an array of `n` (NULL items allowed) and frees it. */
static void
free_values(PyObject **items, Py_ssize_t n)
{
    if (items == NULL)
        return;
    for (Py_ssize_t i = 0; i < n; i++)
        Py_XDECREF(items[i]);
    PyMem_Free(items);
}

static void
columns_dealloc(Columns *self)
{
    Py_XDECREF(self->order);
    Py_XDECREF(self->other);
    free_values(self->rev, self->nrev);
    free_values(self->id, self->nid);
    free_values(self->k, self->nk);
    free_values(self->v, self->nv);
    free_values(self->cast, self->ncast);
    PyMem_Free(self->n);
    PyMem_Free(self->write);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The column a key names, parsed into self. */
static int
parse_column(Columns *self, Parser *p, PyObject *key, unsigned *seen)
{
    static const char *names[] = {"order", "rev", "id", "n", "k", "v", "cast", "write",
                                  "other"};
    int which = -1;
    for (int i = 0; i < 9; i++)
        if (PyUnicode_CompareWithASCIIString(key, names[i]) == 0)
            which = i;
    if (which < 0 || (*seen & (1u << which)))
        return slow();  /* an unknown or repeated key */
    *seen |= 1u << which;
    skip_ws(p);
    switch (which) {
    case 0: {
        Py_ssize_t a, b;
        if (!plain_string(p, &a, &b))
            return slow();
        p->pos = b + 1;
        self->order = PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, p->s + a, b - a);
        return self->order == NULL ? -1 : 0;
    }
    case 1: return parse_values(p, &self->rev, &self->nrev, 0);
    case 2: return parse_values(p, &self->id, &self->nid, 0);
    case 3: return parse_counts(p, &self->n, &self->nn);
    case 4: return parse_values(p, &self->k, &self->nk, 1);
    case 5: return parse_values(p, &self->v, &self->nv, 0);
    case 6: return parse_values(p, &self->cast, &self->ncast, 1);
    case 7: return parse_counts(p, &self->write, &self->nwrite);
    default:
        self->other = scan_value(p);
        return self->other == NULL ? -1 : 0;
    }
}

/* What events.packed_columns checks, once the columns are parsed. */
static int
check_columns(Columns *self, PyObject *count)
{
    Py_ssize_t len = PyUnicode_GET_LENGTH(self->order);
    if (!PyLong_CheckExact(count) || PyLong_AsSsize_t(count) != len)
        return slow();
    const Py_UCS1 *order = PyUnicode_1BYTE_DATA(self->order);
    Py_ssize_t m = 0, c = 0, o = 0, first_m = -1, first_c = -1;
    for (Py_ssize_t i = 0; i < len; i++) {
        if (order[i] == 'm') {
            if (first_m < 0)
                first_m = i;
            m++;
        }
        else if (order[i] == 'c') {
            if (first_c < 0)
                first_c = i;
            c++;
        }
        else if (order[i] == 'o')
            o++;
        else
            return slow();
    }
    if (!PyList_CheckExact(self->other) || PyList_GET_SIZE(self->other) != o
        || self->nrev != m || self->nid != m || self->nn != m || self->ncast != c
        || self->nwrite != c || self->nk != self->nv)
        return slow();
    Py_ssize_t writes = 0;
    for (Py_ssize_t i = 0; i < m; i++)
        writes += self->n[i];
    if (writes != self->nk || (c && (first_m < 0 || first_c < first_m)))
        return slow();
    for (Py_ssize_t i = 0; i < o; i++) {
        PyObject *item = PyList_GET_ITEM(self->other, i);
        if (!PyList_CheckExact(item) || PyList_GET_SIZE(item) != 2
            || !PyUnicode_Check(PyList_GET_ITEM(item, 0)))
            return slow();
    }
    return 0;
}

/* Columns(text, count, scan): see above; ValueError leaves the text to Python. */
static PyObject *
columns_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *text, *count, *scan;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "Columns takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "UOO:Columns", &text, &count, &scan))
        return NULL;
    Columns *self = (Columns *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    if (PyUnicode_READY(text) < 0)
        goto error;
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND) {
        slow();  /* not Latin-1 (the packer writes ASCII): Python parses it */
        goto error;
    }
    Parser p;
    memset(&p, 0, sizeof p);
    p.s = PyUnicode_1BYTE_DATA(text);
    p.len = PyUnicode_GET_LENGTH(text);
    p.text = text;
    p.scan = scan;
    unsigned seen = 0;
    int bad = expect(&p, '{') < 0;
    while (!bad) {
        skip_ws(&p);
        Py_ssize_t a, b;
        if (!plain_string(&p, &a, &b)) {
            bad = slow();
            break;
        }
        p.pos = b + 1;
        PyObject *key = PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, p.s + a, b - a);
        bad = key == NULL || expect(&p, ':') < 0 || parse_column(self, &p, key, &seen) < 0;
        Py_XDECREF(key);
        if (bad)
            break;
        skip_ws(&p);
        if (p.pos < p.len && p.s[p.pos] == ',') {
            p.pos++;
            continue;
        }
        bad = expect(&p, '}') < 0;
        skip_ws(&p);
        if (!bad && (p.pos != p.len || seen != 0x1ffu))
            bad = slow();  /* trailing text, or a column missing */
        break;
    }
    for (int i = 0; i < 256; i++)
        Py_XDECREF(p.names[i]);
    if (bad || check_columns(self, count) < 0)
        goto error;
    return (PyObject *)self;
error:
    Py_DECREF(self);
    return NULL;
}

/* run(context, lo, hi, state) -> state: fold.apply_run_py on these columns. */
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

/* The slot of `obj` at a cached offset (borrowed, maybe NULL), when obj is of the type the
 * cache was filled for; NULL otherwise. */
static inline PyObject *
peek_slot(PyObject *obj, const Slot *cache)
{
    if (obj == NULL || cache->type == NULL || Py_TYPE(obj) != cache->type)
        return NULL;
    return *(PyObject **)((char *)obj + cache->offset);
}

/* Asks the CPU to fetch the first `lines` cache lines of a dict's table (a hint: a
 * prefetch never faults, wherever it points). */
static inline void
prefetch_table(PyObject *dict, int lines)
{
    if (dict != NULL && PyDict_CheckExact(dict)) {
        const char *table = (const char *)((PyDictObject *)dict)->ma_keys;
        for (int q = 0; q < lines; q++)
            PREFETCH(table + 64 * q);
    }
}

static PyObject *
columns_run(Columns *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4)
        return PyErr_Format(PyExc_TypeError, "run takes 4 arguments (%zd given)", nargs);
    PyObject *context = args[0], *state = args[3];
    if (!PyTuple_CheckExact(context) || PyTuple_GET_SIZE(context) != 7
        || !PyTuple_CheckExact(state) || PyTuple_GET_SIZE(state) != 7)
        return PyErr_Format(PyExc_TypeError, "run: malformed arguments");
    Py_ssize_t lo = PyLong_AsSsize_t(args[1]), hi = PyLong_AsSsize_t(args[2]);
    if ((lo == -1 || hi == -1) && PyErr_Occurred())
        return NULL;
    if (lo < 0 || hi > PyUnicode_GET_LENGTH(self->order) || lo > hi)
        return PyErr_Format(PyExc_ValueError, "run: %zd..%zd is not in the order", lo, hi);
    PyObject *const *ctx = &PyTuple_GET_ITEM(context, 0);
    PyObject *objects = ctx[0], *index = ctx[1], *concepts = ctx[2], *create = ctx[3];
    if (!PyDict_CheckExact(objects) || !PyDict_CheckExact(index) || !PyDict_CheckExact(concepts))
        return PyErr_Format(PyExc_TypeError, "run: the engine's tables must be dicts");
    Py_ssize_t m = PyLong_AsSsize_t(PyTuple_GET_ITEM(state, 0));
    Py_ssize_t c = PyLong_AsSsize_t(PyTuple_GET_ITEM(state, 1));
    Py_ssize_t kv = PyLong_AsSsize_t(PyTuple_GET_ITEM(state, 2));
    Py_ssize_t writes_of_last = PyLong_AsSsize_t(PyTuple_GET_ITEM(state, 4));
    if (PyErr_Occurred())
        return NULL;
    if (m < 0 || c < 0 || kv < 0 || m > self->nid || c > self->ncast || kv > self->nk)
        return PyErr_Format(PyExc_ValueError, "run: a cursor out of the columns");
    Slot facts_slot = {NULL, 0}, kind_slot = {NULL, 0}, mapped_slot = {NULL, 0},
         id_slot = {NULL, 0}, shared_slot = {NULL, 0};
    PyObject *cached_cid = NULL, *cached_label = NULL, *cached_id = NULL;  /* the last cast's */
    PyObject **ahead = NULL;  /* the objects of this run's mutations, see below */
    Py_ssize_t first_m = m, nm = 0;
    PyObject *last = PyTuple_GET_ITEM(state, 3);  /* the references below are owned */
    PyObject *top = PyTuple_GET_ITEM(state, 5);
    Py_INCREF(last);
    Py_INCREF(top);
    int changed = PyObject_IsTrue(PyTuple_GET_ITEM(state, 6));
    if (changed < 0)
        goto error;
    const Py_UCS1 *order = PyUnicode_1BYTE_DATA(self->order);
    /* A run writes to one object after another, each object's tables somewhere else in a
     * heap far larger than the CPU's caches: the loop waited on memory more than it
     * computed. So the run's objects are looked up first, in one go (the lookups do not
     * wait on each other), and while one mutation is applied, the tables the next ones
     * write to are fetched: two mutations ahead the tables of `facts` and `mapped`, four
     * ahead those dicts themselves, eight ahead the object. `ahead` holds references; an
     * object not found (or a lookup that fails) is left NULL, and the loop looks it up
     * again as before, creating it or raising. Nothing a run calls replaces an object in
     * `objects` (create only adds one), so what was found is what the loop would find. */
    for (Py_ssize_t pos = lo; pos < hi; pos++)
        nm += order[pos] == 'm';
    if (nm > self->nid - m)
        nm = self->nid - m;  /* the loop raises when it gets there */
    if (nm > 0) {
        ahead = PyMem_Calloc((size_t)nm, sizeof(PyObject *));
        if (ahead == NULL) {
            PyErr_NoMemory();
            goto error;
        }
        for (Py_ssize_t j = 0; j < nm; j++) {
            PyObject *found = PyDict_GetItemWithError(objects, self->id[first_m + j]);
            if (found == NULL)
                PyErr_Clear();
            Py_XINCREF(found);
            ahead[j] = found;
        }
    }
    for (Py_ssize_t pos = lo; pos < hi; pos++) {
        if (order[pos] == 'm') {
            Py_ssize_t j = m - first_m;
            if (j + 8 < nm)
                PREFETCH(ahead[j + 8]);
            if (j + 4 < nm) {
                PREFETCH(peek_slot(ahead[j + 4], &facts_slot));
                PREFETCH(peek_slot(ahead[j + 4], &mapped_slot));
            }
            if (j + 2 < nm) {
                prefetch_table(peek_slot(ahead[j + 2], &facts_slot), 9);
                prefetch_table(peek_slot(ahead[j + 2], &mapped_slot), 6);
            }
            if (m >= self->nid) {
                PyErr_SetString(PyExc_IndexError, "columns: more mutations than the columns hold");
                goto error;
            }
            PyObject *oid = self->id[m], *rev = self->rev[m];
            Py_ssize_t n = self->n[m];
            m++;
            int gt = PyObject_RichCompareBool(rev, top, Py_GT);
            if (gt < 0)
                goto error;
            if (gt) {
                Py_INCREF(rev);
                Py_SETREF(top, rev);
            }
            PyObject *obj = j < nm ? ahead[j] : NULL;
            if (obj == NULL)
                obj = PyDict_GetItemWithError(objects, oid);
            if (obj != NULL)
                Py_INCREF(obj);
            else if (PyErr_Occurred() || (obj = PyObject_CallOneArg(create, oid)) == NULL)
                goto error;
            Py_SETREF(last, obj);
            writes_of_last = n;
            if (n > self->nk - kv) {
                PyErr_SetString(PyExc_ValueError,
                                "columns: a mutation with more writes than the columns hold");
                goto error;
            }
            PyObject *facts = own_facts(obj, &facts_slot, &shared_slot);
            if (facts == NULL)
                goto error;
            /* the key index holds the object's own id, not this parsed copy of it */
            PyObject *own = get_slot(obj, s_id, &id_slot);
            int bad = own == NULL || !PyDict_CheckExact(facts)
                      || PyDict_SetItem(facts, s_rev, rev) < 0;
            if (!bad) {
                int ch = 0;
                bad = write_all(ctx, self->k + kv, self->v + kv, n, obj, own, facts, &ch,
                                &kind_slot) < 0;
                changed |= ch;
            }
            else if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "an object's facts must be a dict");
            Py_XDECREF(own);
            Py_DECREF(facts);
            if (bad)
                goto error;
            kv += n;
        }
        else if (order[pos] == 'c') {
            if (c >= self->ncast) {
                PyErr_SetString(PyExc_IndexError, "columns: more casts than the columns hold");
                goto error;
            }
            Py_ssize_t w = self->write[c];
            PyObject *cid = self->cast[c];
            if (last == Py_None || w < 1 || w > writes_of_last) {
                PyErr_SetString(PyExc_ValueError,
                                "columns: a cast that is not one of the mutation before it");
                goto error;
            }
            if (cid != cached_cid) {  /* runs hold no tree edit: a concept stays the same */
                PyObject *concept = PyDict_GetItemWithError(concepts, cid);  /* borrowed */
                if (concept == NULL) {
                    if (!PyErr_Occurred())
                        PyErr_SetObject(PyExc_KeyError, cid);
                    goto error;
                }
                Py_INCREF(concept);
                PyObject *name = PyObject_GetAttr(concept, s_name);
                PyObject *id = PyObject_GetAttr(concept, s_id);
                Py_DECREF(concept);
                int t = name == NULL || id == NULL ? -1 : PyObject_IsTrue(name);
                if (t < 0) {
                    Py_XDECREF(name);
                    Py_XDECREF(id);
                    goto error;
                }
                Py_XSETREF(cached_label, t ? name : id);
                Py_INCREF(cached_label);
                Py_XSETREF(cached_id, id);
                Py_DECREF(name);
                cached_cid = cid;
            }
            c++;
            PyObject *mapped = get_slot(last, s_mapped, &mapped_slot);
            if (mapped == NULL)
                goto error;
            int bad = PyObject_SetItem(mapped, cached_label, cached_id) < 0;
            Py_DECREF(mapped);
            if (bad)
                goto error;
        }
        else {
            PyErr_Format(PyExc_ValueError, "columns: '%c' is not a columnar letter",
                         (int)order[pos]);
            goto error;
        }
    }
    PyObject *out = Py_BuildValue("(nnnOnOO)", m, c, kv, last, writes_of_last, top,
                                  changed ? Py_True : Py_False);
    free_values(ahead, nm);
    Py_XDECREF(cached_label);
    Py_XDECREF(cached_id);
    Py_DECREF(last);
    Py_DECREF(top);
    return out;
error:
    free_values(ahead, nm);
    Py_XDECREF(cached_label);
    Py_XDECREF(cached_id);
    Py_DECREF(last);
    Py_DECREF(top);
    return NULL;
}

static PyObject *
columns_order(Columns *self, void *closure)
{
    Py_INCREF(self->order);
    return self->order;
}

static PyObject *
columns_other(Columns *self, void *closure)
{
    Py_INCREF(self->other);
    return self->other;
}

static PyObject *
values_list(PyObject **items, Py_ssize_t n)
{
    PyObject *list = PyList_New(n);
    if (list == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(items[i]);
        PyList_SET_ITEM(list, i, items[i]);
    }
    return list;
}

static PyObject *
counts_list(Py_ssize_t *items, Py_ssize_t n)
{
    PyObject *list = PyList_New(n);
    if (list == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyLong_FromSsize_t(items[i]);
        if (x == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, x);
    }
    return list;
}

/* columns() -> dict: the parsed columns as events.packed_columns gives them (for tests). */
static PyObject *
columns_dict(Columns *self, PyObject *unused)
{
    return Py_BuildValue("{sOsNsNsNsNsNsNsNsO}", "order", self->order,
                         "rev", values_list(self->rev, self->nrev),
                         "id", values_list(self->id, self->nid),
                         "n", counts_list(self->n, self->nn),
                         "k", values_list(self->k, self->nk),
                         "v", values_list(self->v, self->nv),
                         "cast", values_list(self->cast, self->ncast),
                         "write", counts_list(self->write, self->nwrite),
                         "other", self->other);
}

static PyMethodDef columns_methods[] = {
    {"columns", (PyCFunction)columns_dict, METH_NOARGS,
     "columns() -> the parsed columns as a dict of lists, as events.packed_columns gives them"},
    {"run", (PyCFunction)(void (*)(void))columns_run, METH_FASTCALL,
     "run(context, lo, hi, state) -> state: apply the columnar records order[lo:hi] "
     "(see fold.apply_run_py)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef columns_getset[] = {
    {"order", (getter)columns_order, NULL, "one letter per record: m, c or o", NULL},
    {"other", (getter)columns_other, NULL, "the whole records, [type, data] each", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ColumnsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cladelog.graph_engine._speedups.Columns",
    .tp_basicsize = sizeof(Columns),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Columns(text, count, scan): the parsed columns of a packed event",
    .tp_new = columns_new,
    .tp_dealloc = (destructor)columns_dealloc,
    .tp_methods = columns_methods,
    .tp_getset = columns_getset,
};

/* ------------------------------------------------------- a packed event's stored bytes */

/* The length of the UTF-8 sequence at s (n bytes left) as Python's strict decoder accepts
 * it (no overlong form, no surrogate, nothing past U+10FFFF), or -1. */
static Py_ssize_t
utf8_length(const unsigned char *s, Py_ssize_t n)
{
    unsigned char c = s[0];
    Py_ssize_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
                     : c >= 0xF0 && c <= 0xF4 ? 4 : -1;
    if (len < 0 || n < len)
        return -1;
    for (Py_ssize_t k = 1; k < len; k++)
        if ((s[k] & 0xC0) != 0x80)
            return -1;
    if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0)
        || (c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90))
        return -1;
    return len;
}

static int
hex_digit(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* bytes a string scan stops at: the quote, the backslash, controls and non-ASCII */
static unsigned char string_stop[256];

#if defined(__SSE2__) && (defined(__GNUC__) || defined(__clang__))
#include <emmintrin.h>
#include <stdint.h>
#define BLOCK_SCAN 1

/* Bit j set where byte j of the 64 at p is `ch`. */
static inline uint64_t
block_eq(const __m128i v[4], char ch)
{
    const __m128i c = _mm_set1_epi8(ch);
    return (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v[0], c))
           | (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v[1], c)) << 16
           | (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v[2], c)) << 32
           | (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v[3], c)) << 48;
}

/* 64 bytes of a string's body at p (p is not an escaped character), in one go:
 *   >= 0  the offset of the closing quote, everything before it plain;
 *   -1    all 64 plain, go on at p + 64;
 *   -2    the 63 before a final backslash plain, go on at that backslash;
 *   -3    something the scalar scan must decide (a control or non-ASCII byte, an escaped
 *         backslash, a \u or an invalid escape).
 * "Plain" is what the scalar scan accepts without doubt: printable ASCII, and escapes of
 * one of "/bfnrt. Since an escaped backslash is not plain, the byte after each backslash
 * is the one it escapes: no run of backslashes to count. The audit of a packed event is a JSON text
 * inside a JSON string, so a backslash every few bytes (each of its quotes is escaped):
 * the byte-by-byte scan stops at each; this does not. */
static inline Py_ssize_t
block_scan(const unsigned char *p)
{
    __m128i v[4];
    for (int k = 0; k < 4; k++)
        v[k] = _mm_loadu_si128((const __m128i *)(p + 16 * k));
    const __m128i space = _mm_set1_epi8(0x20);
    uint64_t odd = 0;  /* controls and non-ASCII: below 0x20 as signed bytes */
    for (int k = 0; k < 4; k++)
        odd |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmplt_epi8(v[k], space)) << (16 * k);
    uint64_t bs = block_eq(v, '\\'), quote = block_eq(v, '"');
    uint64_t escaped = bs << 1;
    uint64_t bad = odd;
    /* escapes of something but a quote; an escaped backslash is one of them, and not
     * simple: so a backslash taken above for one that starts an escape is refused */
    uint64_t other = escaped & ~quote;
    if (other) {
        uint64_t simple = block_eq(v, '/') | block_eq(v, 'b') | block_eq(v, 'f')
                          | block_eq(v, 'n') | block_eq(v, 'r') | block_eq(v, 't');
        bad |= other & ~simple;
    }
    uint64_t end = quote & ~escaped;
    if (end) {
        int at = __builtin_ctzll(end);
        uint64_t before = at ? ~(uint64_t)0 >> (64 - at) : 0;
        return bad & before ? -3 : at;
    }
    if (bad)
        return -3;
    return bs >> 63 ? -2 : -1;
}
#endif

/* The index after the JSON string that starts at s[i], or -1 when it is not one that
 * json.loads of the UTF-8 bytes would accept. Nothing is built. Where it can, 64 bytes
 * are checked at a time (block_scan); the byte-by-byte scan below decides every doubt. */
static Py_ssize_t
skip_string(const unsigned char *s, Py_ssize_t i, Py_ssize_t n)
{
    if (i >= n || s[i] != '"')
        return -1;
    i++;
    for (;;) {
        /* here i is never an escaped character */
#ifdef BLOCK_SCAN
        while (n - i >= 64) {
            Py_ssize_t r = block_scan(s + i);
            if (r >= 0)
                return i + r + 1;
            if (r == -3)
                break;
            i += r == -1 ? 64 : 63;
        }
        Py_ssize_t stop = i + 64;  /* the scalar scan decides the next 64 bytes or so */
#else
        Py_ssize_t stop = n;
#endif
        if (i >= n)
            return -1;
        while (i < stop) {
            while (i < n && !string_stop[s[i]])
                i++;
            if (i >= n)
                return -1;
            unsigned char ch = s[i];
            if (ch == '"')
                return i + 1;
            if (ch == '\\') {
                if (i + 1 >= n)
                    return -1;
                unsigned char e = s[i + 1];
                if (e == 'u') {
                    if (n - i < 6 || !hex_digit(s[i + 2]) || !hex_digit(s[i + 3])
                        || !hex_digit(s[i + 4]) || !hex_digit(s[i + 5]))
                        return -1;
                    i += 6;
                } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f'
                           || e == 'n' || e == 'r' || e == 't') {
                    i += 2;
                } else {
                    return -1;
                }
            } else if (ch < 0x20) {
                return -1;
            } else {
                Py_ssize_t len = utf8_length(s + i, n - i);
                if (len < 0)
                    return -1;
                i += len;
            }
        }
    }
}

/* packed_split(stored) -> (columns, end) or None.
 *
 * A records_packed event's data as stored is canonical JSON, its keys sorted:
 * {"audit":"...","columns":"...","count":...}. This finds the columns text (the second
 * string, unescaped) without building the audit, which a replay does not read, and
 * returns it with the index of the comma that follows it; the caller parses the rest.
 * None: the bytes are not laid out so (or the columns hold a \u escape); the caller then
 * parses all of them, which decides. The audit is checked to be a well-formed string. */
static PyObject *
packed_split(PyObject *module, PyObject *arg)
{
    static const char head[] = "{\"audit\":", mid[] = ",\"columns\":";
    const Py_ssize_t head_n = sizeof head - 1, mid_n = sizeof mid - 1;
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "packed_split: bytes expected");
        return NULL;
    }
    const unsigned char *s = (const unsigned char *)PyBytes_AS_STRING(arg);
    Py_ssize_t n = PyBytes_GET_SIZE(arg);
    if (n < head_n || memcmp(s, head, head_n) != 0)
        Py_RETURN_NONE;
    Py_ssize_t a = skip_string(s, head_n, n);
    if (a < 0 || n - a < mid_n || memcmp(s + a, mid, mid_n) != 0)
        Py_RETURN_NONE;
    a += mid_n;
    Py_ssize_t b = skip_string(s, a, n);
    if (b < 0 || b >= n || s[b] != ',')
        Py_RETURN_NONE;
    /* the columns' text, unescaped: never longer than its escaped form */
    char *buf = PyMem_Malloc((size_t)(b - a));
    if (buf == NULL)
        return PyErr_NoMemory();
    Py_ssize_t m = 0;
    for (Py_ssize_t j = a + 1; j < b - 1; j++) {
        unsigned char ch = s[j];
        if (ch != '\\') {
            buf[m++] = (char)ch;
            continue;
        }
        unsigned char e = s[++j];  /* skip_string vouched for a valid escape */
        if (e == 'u') {
            PyMem_Free(buf);
            Py_RETURN_NONE;
        }
        buf[m++] = e == 'b' ? '\b' : e == 'f' ? '\f' : e == 'n' ? '\n' : e == 'r' ? '\r'
                   : e == 't' ? '\t' : (char)e;
    }
    PyObject *text = PyUnicode_DecodeUTF8(buf, m, NULL);  /* skip_string checked the UTF-8 */
    PyMem_Free(buf);
    if (text == NULL)
        return NULL;
    return Py_BuildValue("(Nn)", text, b);
}

/* ------------------------------------------------------------------ the record packer */

/* Packer(record_status): events.RecordPacker's add and _close, compiled (the Python class
 * stays the reference; events.CompiledRecordPacker adds its seal). The columns are Python
 * lists, exposed under RecordPacker's attribute names, so the one seal serves both. */
typedef struct {
    PyObject_HEAD
    Py_ssize_t count, errors, settles;
    char clean;
    PyObject *settled, *status, *status_fn;
    PyObject *order, *rev, *id, *n, *k, *v, *cast, *write, *other, *target, *cause;
    PyObject *mutation, *follow;
} Packer;

static PyObject *s_cast, *s_uncast, *s_provider_error, *s_mutation_applied, *s_settled,
    *s_tree_loaded, *s_run_failed, *s_at, *s_concept, *s_object, *s_items, *s_set,
    *s_create, *s_target_key, *s_cause, *s_rev_key, *s_m, *s_c, *s_o;

/* kind == name, as Python compares them (name is an interned str). 1, 0 or -1. */
static int
is_kind(PyObject *kind, PyObject *name)
{
    if (kind == name)
        return 1;
    if (PyUnicode_CheckExact(kind))
        return PyUnicode_GET_LENGTH(kind) == PyUnicode_GET_LENGTH(name)
               && PyUnicode_Compare(kind, name) == 0;
    return PyObject_RichCompareBool(kind, name, Py_EQ);
}

/* events._columnar: a mutation_applied data object of the columnar shape. 1, 0 or -1. */
static int
columnar(PyObject *data)
{
    if (!PyDict_CheckExact(data) || PyDict_GET_SIZE(data) != 4)
        return 0;
    PyObject *rev = PyDict_GetItemWithError(data, s_rev_key);
    if (rev == NULL || !PyLong_CheckExact(rev))
        return PyErr_Occurred() ? -1 : 0;
    int has = PyDict_Contains(data, s_target_key);
    if (has <= 0)
        return has;
    if ((has = PyDict_Contains(data, s_cause)) <= 0)
        return has;
    PyObject *items = PyDict_GetItemWithError(data, s_items);
    if (items == NULL || !PyList_CheckExact(items) || PyList_GET_SIZE(items) != 1)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *item = PyList_GET_ITEM(items, 0);
    if (!PyDict_CheckExact(item) || PyDict_GET_SIZE(item) != 3)
        return 0;
    if ((has = PyDict_Contains(item, s_id)) <= 0)
        return has;
    PyObject *create = PyDict_GetItemWithError(item, s_create);
    if (create == NULL || create != Py_None)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *pairs = PyDict_GetItemWithError(item, s_set);
    if (pairs == NULL || !PyList_CheckExact(pairs))
        return PyErr_Occurred() ? -1 : 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pairs); i++) {
        PyObject *p = PyList_GET_ITEM(pairs, i);
        if (!(PyList_CheckExact(p) || PyTuple_CheckExact(p)) || PySequence_Fast_GET_SIZE(p) != 2)
            return 0;
    }
    return 1;
}

/* events._cast_of: a cast data object {object, concept, at: [rev, w]} of the columnar
 * `mutation`, at one of its writes. 1, 0 or -1. */
static int
cast_of(PyObject *data, PyObject *mutation)
{
    PyObject *at = PyDict_GetItemWithError(data, s_at);
    if (at == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (PyDict_GET_SIZE(data) != 3)
        return 0;
    int has = PyDict_Contains(data, s_concept);
    if (has <= 0)
        return has;
    if (!(PyList_CheckExact(at) || PyTuple_CheckExact(at)) || PySequence_Fast_GET_SIZE(at) != 2)
        return 0;
    PyObject *items = PyDict_GetItemWithError(mutation, s_items);
    if (items == NULL || !PyList_CheckExact(items) || PyList_GET_SIZE(items) < 1
        || !PyDict_CheckExact(PyList_GET_ITEM(items, 0))) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "pack: a held mutation changed");
        return -1;
    }
    PyObject *item = PyList_GET_ITEM(items, 0);
    PyObject *object = PyDict_GetItemWithError(data, s_object);
    if (object == NULL && PyErr_Occurred())
        return -1;
    PyObject *oid = PyDict_GetItemWithError(item, s_id);
    if (oid == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetObject(PyExc_KeyError, s_id);
        return -1;
    }
    int same = PyObject_RichCompareBool(object != NULL ? object : Py_None, oid, Py_EQ);
    if (same <= 0)
        return same;
    PyObject *at_rev = PySequence_Fast_GET_ITEM(at, 0), *at_w = PySequence_Fast_GET_ITEM(at, 1);
    if (!PyLong_CheckExact(at_rev) || !PyLong_CheckExact(at_w))
        return 0;
    PyObject *rev = PyDict_GetItemWithError(mutation, s_rev_key);
    if (rev == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetObject(PyExc_KeyError, s_rev_key);
        return -1;
    }
    if ((same = PyObject_RichCompareBool(at_rev, rev, Py_EQ)) <= 0)
        return same;
    PyObject *pairs = PyDict_GetItemWithError(item, s_set);
    if (pairs == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetObject(PyExc_KeyError, s_set);
        return -1;
    }
    Py_ssize_t n = PyObject_Length(pairs);
    if (n < 0)
        return -1;
    int overflow = 0;
    long long w = PyLong_AsLongLongAndOverflow(at_w, &overflow);
    if (w == -1 && PyErr_Occurred())
        return -1;
    return !overflow && w >= 1 && w <= n;
}

static int
append_pair(PyObject *list, PyObject *kind, PyObject *data)
{
    PyObject *pair = PyTuple_Pack(2, kind, data);
    if (pair == NULL)
        return -1;
    int r = PyList_Append(list, pair);
    Py_DECREF(pair);
    return r;
}

/* RecordPacker._close: lay out the held mutation and what followed it. */
static int
packer_close_held(Packer *self)
{
    PyObject *mutation = self->mutation, *follow = self->follow;  /* owned, taken over */
    self->mutation = NULL;
    int ok = -1;
    if (PyList_GET_SIZE(follow) == 0) {
        Py_INCREF(follow);  /* an empty list stays the packer's */
    } else if ((self->follow = PyList_New(0)) == NULL) {
        self->follow = follow;
        Py_INCREF(follow);
        goto done;
    }
    if (!self->clean) {
        self->clean = 1;
        if (PyList_Append(self->order, s_o) < 0
            || append_pair(self->other, s_mutation_applied, mutation) < 0)
            goto done;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(follow); i++) {
            if (PyList_Append(self->order, s_o) < 0
                || PyList_Append(self->other, PyList_GET_ITEM(follow, i)) < 0)
                goto done;
        }
        ok = 0;
        goto done;
    }
    /* columnar(mutation) held at add; the checks below only keep a record changed since
     * from crashing the packer */
    PyObject *items = PyDict_GetItemWithError(mutation, s_items);
    PyObject *item = items != NULL && PyList_CheckExact(items) && PyList_GET_SIZE(items) == 1
                     ? PyList_GET_ITEM(items, 0) : NULL;
    PyObject *pairs = item != NULL && PyDict_CheckExact(item)
                      ? PyDict_GetItemWithError(item, s_set) : NULL;
    PyObject *oid = item != NULL && PyDict_CheckExact(item)
                    ? PyDict_GetItemWithError(item, s_id) : NULL;
    PyObject *rev = PyDict_GetItemWithError(mutation, s_rev_key);
    PyObject *target = PyDict_GetItemWithError(mutation, s_target_key);
    PyObject *cause = PyDict_GetItemWithError(mutation, s_cause);
    if (PyErr_Occurred())
        goto done;
    if (pairs == NULL || !PyList_CheckExact(pairs) || oid == NULL || rev == NULL
        || target == NULL || cause == NULL) {
        PyErr_SetString(PyExc_ValueError, "pack: a held mutation changed");
        goto done;
    }
    Py_ssize_t np = PyList_GET_SIZE(pairs);
    PyObject *count = PyLong_FromSsize_t(np);
    int bad = count == NULL || PyList_Append(self->order, s_m) < 0
              || PyList_Append(self->rev, rev) < 0 || PyList_Append(self->id, oid) < 0
              || PyList_Append(self->n, count) < 0;
    Py_XDECREF(count);
    if (bad)
        goto done;
    for (Py_ssize_t i = 0; i < np; i++) {
        PyObject *p = PyList_GET_ITEM(pairs, i);
        if (!(PyList_CheckExact(p) || PyTuple_CheckExact(p)) || PySequence_Fast_GET_SIZE(p) != 2) {
            PyErr_SetString(PyExc_ValueError, "pack: a held mutation changed");
            goto done;
        }
        if (PyList_Append(self->k, PySequence_Fast_GET_ITEM(p, 0)) < 0
            || PyList_Append(self->v, PySequence_Fast_GET_ITEM(p, 1)) < 0)
            goto done;
    }
    if (PyList_Append(self->target, target) < 0 || PyList_Append(self->cause, cause) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(follow); i++) {
        PyObject *entry = PyList_GET_ITEM(follow, i);  /* (kind, data) */
        PyObject *kind = PyTuple_GET_ITEM(entry, 0), *data = PyTuple_GET_ITEM(entry, 1);
        int cast = is_kind(kind, s_cast);
        if (cast < 0)
            goto done;
        if (cast) {
            PyObject *concept = PyDict_GetItemWithError(data, s_concept);
            PyObject *at = PyDict_GetItemWithError(data, s_at);
            if (concept == NULL || at == NULL || !(PyList_CheckExact(at) || PyTuple_CheckExact(at))
                || PySequence_Fast_GET_SIZE(at) != 2) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, "pack: a held cast changed");
                goto done;
            }
            if (PyList_Append(self->order, s_c) < 0 || PyList_Append(self->cast, concept) < 0
                || PyList_Append(self->write, PySequence_Fast_GET_ITEM(at, 1)) < 0)
                goto done;
        }
        else if (PyList_Append(self->order, s_o) < 0 || PyList_Append(self->other, entry) < 0)
            goto done;
    }
    ok = 0;
done:
    Py_DECREF(mutation);
    Py_DECREF(follow);
    return ok;
}

static PyObject *
packer_close(Packer *self, PyObject *unused)
{
    if (self->mutation == NULL) {
        PyErr_SetString(PyExc_ValueError, "pack: no mutation is held");
        return NULL;
    }
    if (packer_close_held(self) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* add(kind, data): RecordPacker.add. */
static PyObject *
packer_add(Packer *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2)
        return PyErr_Format(PyExc_TypeError, "add takes 2 arguments (%zd given)", nargs);
    PyObject *kind = args[0], *data = args[1];
    self->count++;
    int t;
    if (self->mutation != NULL) {
        int cast = is_kind(kind, s_cast), uncast = cast ? 0 : is_kind(kind, s_uncast);
        if (cast < 0 || uncast < 0)
            return NULL;
        if (cast || uncast) {
            PyObject *at = PyDict_CheckExact(data) ? PyDict_GetItemWithError(data, s_at) : NULL;
            if (at == NULL && PyErr_Occurred())
                return NULL;
            if (at != NULL && at != Py_None) {
                if (self->clean) {
                    if (uncast)
                        self->clean = 0;
                    else if ((t = cast_of(data, self->mutation)) < 0)
                        return NULL;
                    else if (!t)
                        self->clean = 0;
                }
                if (append_pair(self->follow, kind, data) < 0)
                    return NULL;
                Py_RETURN_NONE;
            }
        }
        else if ((t = is_kind(kind, s_provider_error)) != 0) {
            if (t < 0)
                return NULL;
            self->errors++;
            if (append_pair(self->follow, kind, data) < 0)
                return NULL;
            Py_RETURN_NONE;
        }
        if (packer_close_held(self) < 0)
            return NULL;
    }
    if ((t = is_kind(kind, s_mutation_applied)) != 0) {
        if (t < 0 || (t = columnar(data)) < 0)
            return NULL;
        if (t) {
            Py_INCREF(data);
            self->mutation = data;
            Py_RETURN_NONE;
        }
    }
    else if ((t = is_kind(kind, s_provider_error)) != 0) {
        if (t < 0)
            return NULL;
        self->errors++;
    }
    else {
        /* Python asks `kind in _STATUS_KINDS` (a set): an unhashable kind raises there */
        if (!PyUnicode_CheckExact(kind) && PyObject_Hash(kind) == -1)
            return NULL;
        int settled = is_kind(kind, s_settled);
        int status_kind = settled ? settled : is_kind(kind, s_tree_loaded);
        if (!status_kind)
            status_kind = is_kind(kind, s_run_failed);
        if (settled < 0 || status_kind < 0)
            return NULL;
        if (status_kind) {  /* never held in columns: record_status decides, in Python */
            if (settled) {
                Py_INCREF(data);
                Py_SETREF(self->settled, data);
            }
            PyObject *status = PyObject_CallFunctionObjArgs(self->status_fn, kind, data, NULL);
            if (status == NULL)
                return NULL;
            if (status != Py_None) {
                Py_SETREF(self->status, status);
                self->settles += settled;
            }
            else
                Py_DECREF(status);
        }
    }
    if (PyList_Append(self->order, s_o) < 0 || append_pair(self->other, kind, data) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static Py_ssize_t
packer_len(Packer *self)
{
    return self->count;
}

#define PACKER_LISTS(X) X(order) X(rev) X(id) X(n) X(k) X(v) X(cast) X(write) X(other) \
    X(target) X(cause)
/* every object a packer holds */
#define PACKER_OBJECTS(X) PACKER_LISTS(X) X(follow) X(mutation) X(settled) X(status) \
    X(status_fn)

static PyObject *
packer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *status_fn;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "Packer takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O:Packer", &status_fn))
        return NULL;
    Packer *self = (Packer *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->clean = 1;
    Py_INCREF(status_fn);
    self->status_fn = status_fn;
    Py_INCREF(Py_None);
    self->settled = Py_None;
    Py_INCREF(Py_None);
    self->status = Py_None;
#define NEW_LIST(name) if ((self->name = PyList_New(0)) == NULL) goto error;
    PACKER_LISTS(NEW_LIST)
    NEW_LIST(follow)
#undef NEW_LIST
    return (PyObject *)self;
error:
    Py_DECREF(self);
    return NULL;
}

static int
packer_traverse(Packer *self, visitproc visit, void *arg)
{
#define VISIT(name) Py_VISIT(self->name);
    PACKER_OBJECTS(VISIT)
#undef VISIT
    return 0;
}

static int
packer_clear(Packer *self)
{
#define CLEAR(name) Py_CLEAR(self->name);
    PACKER_OBJECTS(CLEAR)
#undef CLEAR
    return 0;
}

/* (a subclass's instances: subtype_dealloc calls this, and releases the type itself) */
static void
packer_dealloc(Packer *self)
{
    PyObject_GC_UnTrack(self);
    packer_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef packer_members[] = {
    {"_count", T_PYSSIZET, offsetof(Packer, count), READONLY, NULL},
    {"_errors", T_PYSSIZET, offsetof(Packer, errors), READONLY, NULL},
    {"_settles", T_PYSSIZET, offsetof(Packer, settles), READONLY, NULL},
    {"_clean", T_BOOL, offsetof(Packer, clean), 0, NULL},
    {"_settled", T_OBJECT, offsetof(Packer, settled), READONLY, NULL},
    {"_status", T_OBJECT, offsetof(Packer, status), READONLY, NULL},
    {"_mutation", T_OBJECT, offsetof(Packer, mutation), READONLY, NULL},
    {"_follow", T_OBJECT, offsetof(Packer, follow), READONLY, NULL},
#define MEMBER(name) {"_" #name, T_OBJECT, offsetof(Packer, name), READONLY, NULL},
    PACKER_LISTS(MEMBER)
#undef MEMBER
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef packer_methods[] = {
    {"add", (PyCFunction)(void (*)(void))packer_add, METH_FASTCALL, "add(kind, data)"},
    {"_close", (PyCFunction)packer_close, METH_NOARGS, "lay out the held mutation"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods packer_as_sequence = {
    .sq_length = (lenfunc)packer_len,
};

static PyTypeObject PackerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cladelog.graph_engine._speedups.Packer",
    .tp_basicsize = sizeof(Packer),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Packer(record_status): events.RecordPacker's add, compiled",
    .tp_new = packer_new,
    .tp_dealloc = (destructor)packer_dealloc,
    .tp_traverse = (traverseproc)packer_traverse,
    .tp_clear = (inquiry)packer_clear,
    .tp_methods = packer_methods,
    .tp_members = packer_members,
    .tp_as_sequence = &packer_as_sequence,
};

/* ------------------------------------------------------------- the packed columns' JSON */

/* encode_json(value) -> str or None: json.dumps(value, separators=(",", ":"),
 * ensure_ascii=False, allow_nan=False) for the values a pack holds (exact dicts with str
 * keys, lists, tuples, ASCII strings, ints, finite floats, True, False, None); None for
 * anything else, which the caller then encodes with the json module (so the text is
 * always the json module's, and so are its errors). */
typedef struct {
    char *buf;
    Py_ssize_t len, cap;
} Text;

static int
text_put(Text *t, const char *s, Py_ssize_t n)
{
    if (t->len + n > t->cap) {
        Py_ssize_t cap = t->cap ? t->cap : 4096;
        while (cap < t->len + n)
            cap *= 2;
        char *grown = PyMem_Realloc(t->buf, (size_t)cap);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        t->buf = grown;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, s, (size_t)n);
    t->len += n;
    return 0;
}

/* 1 done, 0 not a supported value (nothing sensible written), -1 error */
static int
text_value(Text *t, PyObject *v, int depth)
{
    if (depth > 200)
        return 0;  /* deep nesting: the json module decides */
    if (v == Py_None)
        return text_put(t, "null", 4) < 0 ? -1 : 1;
    if (v == Py_True)
        return text_put(t, "true", 4) < 0 ? -1 : 1;
    if (v == Py_False)
        return text_put(t, "false", 5) < 0 ? -1 : 1;
    if (PyUnicode_CheckExact(v)) {
        if (!PyUnicode_IS_ASCII(v))
            return 0;
        const Py_UCS1 *s = PyUnicode_1BYTE_DATA(v);
        Py_ssize_t n = PyUnicode_GET_LENGTH(v), start = 0;
        if (text_put(t, "\"", 1) < 0)
            return -1;
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_UCS1 ch = s[i];
            if (ch >= 0x20 && ch != '"' && ch != '\\')
                continue;
            if (text_put(t, (const char *)s + start, i - start) < 0)
                return -1;
            char esc[8];
            int m = 2;
            esc[0] = '\\';
            switch (ch) {
            case '"': esc[1] = '"'; break;
            case '\\': esc[1] = '\\'; break;
            case '\n': esc[1] = 'n'; break;
            case '\r': esc[1] = 'r'; break;
            case '\t': esc[1] = 't'; break;
            case '\b': esc[1] = 'b'; break;
            case '\f': esc[1] = 'f'; break;
            default:
                m = snprintf(esc, sizeof esc, "\\u%04x", ch);
            }
            if (text_put(t, esc, m) < 0)
                return -1;
            start = i + 1;
        }
        if (text_put(t, (const char *)s + start, n - start) < 0 || text_put(t, "\"", 1) < 0)
            return -1;
        return 1;
    }
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred())
            return -1;
        if (!overflow) {
            char digits[24];
            int m = snprintf(digits, sizeof digits, "%lld", x);
            return text_put(t, digits, m) < 0 ? -1 : 1;
        }
        PyObject *r = PyObject_Repr(v);  /* what the json module writes for any int */
        if (r == NULL)
            return -1;
        int ok = text_put(t, PyUnicode_AsUTF8(r), PyUnicode_GET_LENGTH(r));
        Py_DECREF(r);
        return ok < 0 ? -1 : 1;
    }
    if (PyFloat_CheckExact(v)) {
        double d = PyFloat_AS_DOUBLE(v);
        if (!isfinite(d))
            return 0;  /* allow_nan=False: the json module raises */
        PyObject *r = PyObject_Repr(v);
        if (r == NULL)
            return -1;
        int ok = text_put(t, PyUnicode_AsUTF8(r), PyUnicode_GET_LENGTH(r));
        Py_DECREF(r);
        return ok < 0 ? -1 : 1;
    }
    if (PyList_CheckExact(v) || PyTuple_CheckExact(v)) {
        if (text_put(t, "[", 1) < 0)
            return -1;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(v); i++) {
            if (i && text_put(t, ",", 1) < 0)
                return -1;
            int r = text_value(t, PySequence_Fast_GET_ITEM(v, i), depth + 1);
            if (r <= 0)
                return r;
        }
        return text_put(t, "]", 1) < 0 ? -1 : 1;
    }
    if (PyDict_CheckExact(v)) {
        if (text_put(t, "{", 1) < 0)
            return -1;
        Py_ssize_t pos = 0, i = 0;
        PyObject *key, *value;
        while (PyDict_Next(v, &pos, &key, &value)) {
            if (!PyUnicode_CheckExact(key))
                return 0;  /* the json module turns such keys into strings */
            if ((i++ && text_put(t, ",", 1) < 0))
                return -1;
            int r = text_value(t, key, depth + 1);
            if (r <= 0)
                return r;
            if (text_put(t, ":", 1) < 0)
                return -1;
            if ((r = text_value(t, value, depth + 1)) <= 0)
                return r;
        }
        return text_put(t, "}", 1) < 0 ? -1 : 1;
    }
    return 0;
}

static PyObject *
encode_json(PyObject *module, PyObject *value)
{
    Text t = {NULL, 0, 0};
    int r = text_value(&t, value, 0);
    PyObject *out = NULL;
    if (r > 0)
        out = PyUnicode_DecodeASCII(t.buf, t.len, NULL);  /* only ASCII was written */
    else if (r == 0) {
        Py_INCREF(Py_None);
        out = Py_None;
    }
    PyMem_Free(t.buf);
    return out;
}

/* write_pairs(context, obj, oid, pairs) -> bool: fold._write_all, the writes of `pairs` (a
 * dict, or a tuple or list of [key, value] pairs) to `obj` of id `oid`, with `context` as
 * Columns.run takes it; whether a fact changed. A replay writes its seed objects so. */
static PyObject *
write_pairs(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4)
        return PyErr_Format(PyExc_TypeError, "write_pairs takes 4 arguments (%zd given)", nargs);
    PyObject *context = args[0], *obj = args[1], *oid = args[2], *pairs = args[3];
    if (!PyTuple_CheckExact(context) || PyTuple_GET_SIZE(context) != 7
        || !PyDict_CheckExact(PyTuple_GET_ITEM(context, 1)))
        return PyErr_Format(PyExc_TypeError, "write_pairs: malformed context");
    PyObject *seq = NULL;
    Py_ssize_t n;
    if (PyDict_CheckExact(pairs)) {
        n = PyDict_GET_SIZE(pairs);
    } else if (PyTuple_CheckExact(pairs) || PyList_CheckExact(pairs)) {
        seq = PySequence_Fast(pairs, "write_pairs");  /* a list may change while written */
        if (seq == NULL)
            return NULL;
        n = PySequence_Fast_GET_SIZE(seq);
    } else {
        return PyErr_Format(PyExc_TypeError, "write_pairs: pairs must be a dict, tuple or list");
    }
    PyObject **items = PyMem_Calloc((size_t)(n ? 2 * n : 1), sizeof(PyObject *));
    if (items == NULL) {
        Py_XDECREF(seq);
        return PyErr_NoMemory();
    }
    PyObject *result = NULL, *facts = NULL;
    Py_ssize_t got = 0;
    if (seq == NULL) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (got < n && PyDict_Next(pairs, &pos, &key, &value)) {
            Py_INCREF(key);
            Py_INCREF(value);
            items[got] = key;
            items[n + got] = value;
            got++;
        }
    } else {
        for (; got < n; got++) {
            PyObject *pair = PySequence_Fast_GET_ITEM(seq, got);
            if (!PyTuple_CheckExact(pair) && !PyList_CheckExact(pair)) {
                PyErr_SetString(PyExc_TypeError, "write_pairs: a pair that is not a sequence");
                goto done;
            }
            if (PySequence_Fast_GET_SIZE(pair) != 2) {
                PyErr_SetString(PyExc_ValueError, "write_pairs: a pair of other than two items");
                goto done;
            }
            items[got] = PySequence_Fast_GET_ITEM(pair, 0);
            items[n + got] = PySequence_Fast_GET_ITEM(pair, 1);
            Py_INCREF(items[got]);
            Py_INCREF(items[n + got]);
        }
    }
    Slot facts_slot = {NULL, 0}, shared_slot = {NULL, 0};
    facts = own_facts(obj, &facts_slot, &shared_slot);
    if (facts == NULL)
        goto done;
    if (!PyDict_CheckExact(facts)) {
        PyErr_SetString(PyExc_TypeError, "an object's facts must be a dict");
        goto done;
    }
    int changed = 0;
    Slot kinds = {NULL, 0};
    if (write_all(&PyTuple_GET_ITEM(context, 0), items, items + n, got, obj, oid, facts,
                  &changed, &kinds) == 0)
        result = PyBool_FromLong(changed);
done:
    for (Py_ssize_t i = 0; i < got; i++) {
        Py_DECREF(items[i]);
        Py_DECREF(items[n + i]);
    }
    PyMem_Free(items);
    Py_XDECREF(facts);
    Py_XDECREF(seq);
    return result;
}

/* ------------------------------------------------------------------ a new object */

/* new_object(cls, oid, kind): the object cls(oid, kind) makes, for objects.GraphObject (its
 * __init__ stays the reference): every slot None but id, kind, facts ({"_id": oid}), open
 * ([]) and mapped ({}). The slots are learned from cls.__slots__ on first use (a class with
 * other bases, a __dict__, or slots that are not plain object members is simply called),
 * then written at their offsets: 10,000 objects in ~4 ms, not ~7. */
enum { ROLE_NONE, ROLE_ID, ROLE_KIND, ROLE_FACTS, ROLE_OPEN, ROLE_MAPPED };
#define MAX_SLOTS 32
static struct {
    PyTypeObject *type;  /* the class learned (a reference: no other class takes its place) */
    int usable, n;
    Py_ssize_t offset[MAX_SLOTS];
    int role[MAX_SLOTS];
} layout;
static PyObject *s_id_fact;

static int
learn_layout(PyTypeObject *type)
{
    Py_INCREF(type);
    Py_XSETREF(layout.type, type);
    layout.usable = 0;
    layout.n = 0;
    if (type->tp_base != &PyBaseObject_Type || type->tp_dictoffset != 0
        || type->tp_alloc == NULL)
        return 0;
    PyObject *slots = PyDict_GetItemString(type->tp_dict, "__slots__");  /* borrowed */
    if (slots == NULL || !PyTuple_CheckExact(slots) || PyTuple_GET_SIZE(slots) > MAX_SLOTS)
        return 0;
    static const char *roles[] = {NULL, "id", "kind", "facts", "open", "mapped"};
    int found = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(slots); i++) {
        PyObject *name = PyTuple_GET_ITEM(slots, i);
        if (!PyUnicode_CheckExact(name))
            return 0;
        PyObject *descr = _PyType_Lookup(type, name);  /* borrowed */
        if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type))
            return 0;
        PyMemberDef *def = ((PyMemberDescrObject *)descr)->d_member;
        if (def->type != T_OBJECT_EX || (def->flags & READONLY))
            return 0;
        int role = ROLE_NONE;
        for (int r = ROLE_ID; r <= ROLE_MAPPED; r++)
            if (PyUnicode_CompareWithASCIIString(name, roles[r]) == 0)
                role = r;
        found |= 1 << role;
        layout.offset[layout.n] = def->offset;
        layout.role[layout.n] = role;
        layout.n++;
    }
    /* the five set by __init__ must all be there */
    layout.usable = (found & 0x3e) == 0x3e;
    return 0;
}

static PyObject *
new_object(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyType_Check(args[0]))
        return PyErr_Format(PyExc_TypeError, "new_object(cls, oid, kind)");
    PyTypeObject *type = (PyTypeObject *)args[0];
    if (type != layout.type)
        learn_layout(type);
    if (!layout.usable)
        return PyObject_Vectorcall(args[0], args + 1, 2, NULL);
    PyObject *oid = args[1], *kind = args[2];
    PyObject *facts = PyDict_New();
    if (facts == NULL || PyDict_SetItem(facts, s_id_fact, oid) < 0) {
        Py_XDECREF(facts);
        return NULL;
    }
    PyObject *open = PyList_New(0), *mapped = PyDict_New();
    PyObject *obj = open && mapped ? type->tp_alloc(type, 0) : NULL;
    if (obj == NULL) {
        Py_DECREF(facts);
        Py_XDECREF(open);
        Py_XDECREF(mapped);
        return NULL;
    }
    for (int i = 0; i < layout.n; i++) {
        PyObject *value;
        switch (layout.role[i]) {
        case ROLE_ID: value = Py_NewRef(oid); break;
        case ROLE_KIND: value = Py_NewRef(kind); break;
        case ROLE_FACTS: value = facts; break;  /* the references made above */
        case ROLE_OPEN: value = open; break;
        case ROLE_MAPPED: value = mapped; break;
        default: value = Py_NewRef(Py_None);
        }
        *(PyObject **)((char *)obj + layout.offset[i]) = value;
    }
    return obj;
}

static PyMethodDef methods[] = {
    {"encode_json", encode_json, METH_O,
     "encode_json(value) -> str or None: json.dumps of a pack's plain values, compact"},
    {"write_pairs", (PyCFunction)(void (*)(void))write_pairs, METH_FASTCALL,
     "write_pairs(context, obj, oid, pairs) -> bool: fold._write_all, compiled"},
    {"new_object", (PyCFunction)(void (*)(void))new_object, METH_FASTCALL,
     "new_object(cls, oid, kind): what cls(oid, kind) makes, for objects.GraphObject."},
    {"packed_split", packed_split, METH_O,
     "packed_split(stored) -> (columns, end) or None: a packed event's columns text from "
     "its stored bytes, without building its audit"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "cladelog.graph_engine._speedups",
    "Compiled replay step (optional; the pure-Python path is the reference).", -1, methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    struct { PyObject **slot; const char *text; } names[] = {
        {&s_facts, "facts"}, {&s_mapped, "mapped"}, {&s_kind, "kind"}, {&s_name, "name"},
        {&s_id, "id"}, {&s_rev, "_rev"}, {&s_push, "__push"}, {&s_segment, "segment"},
        {&s_origin, "originNode"}, {&s_target, "targetNode"}, {&s_id_fact, "_id"},
        {&s_shared, "shared"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (*names[i].slot == NULL && (*names[i].slot = PyUnicode_InternFromString(names[i].text)) == NULL)
            return NULL;
    for (int c = 0; c < 256; c++)
        string_stop[c] = c == '"' || c == '\\' || c < 0x20 || c >= 0x80;
    struct { PyObject **slot; const char *text; } kinds[] = {
        {&s_cast, "cast"}, {&s_uncast, "uncast"}, {&s_provider_error, "provider_error"},
        {&s_mutation_applied, "mutation_applied"}, {&s_settled, "settled"},
        {&s_tree_loaded, "tree_loaded"}, {&s_run_failed, "run_failed"}, {&s_at, "at"},
        {&s_concept, "concept"}, {&s_object, "object"}, {&s_items, "items"}, {&s_set, "set"},
        {&s_create, "create"}, {&s_target_key, "target"}, {&s_cause, "cause"},
        {&s_rev_key, "rev"}, {&s_m, "m"}, {&s_c, "c"}, {&s_o, "o"},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (*kinds[i].slot == NULL && (*kinds[i].slot = PyUnicode_InternFromString(kinds[i].text)) == NULL)
            return NULL;
    if (PyType_Ready(&ColumnsType) < 0 || PyType_Ready(&PackerType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&moduledef);
    if (module == NULL)
        return NULL;
    Py_INCREF(&ColumnsType);
    if (PyModule_AddObject(module, "Columns", (PyObject *)&ColumnsType) < 0) {
        Py_DECREF(&ColumnsType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&PackerType);
    if (PyModule_AddObject(module, "Packer", (PyObject *)&PackerType) < 0) {
        Py_DECREF(&PackerType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
