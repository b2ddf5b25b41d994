/* Compiled kernels for point reads (docs/FORMAT.md):
 * - the CRC_BLOCKS checksums (format 1.5): a CRC32 per block of a page's payload,
 *   verified over exactly the blocks a point read touched;
 * - the header checks of ZSTD_BLOCKS frames before they are decompressed (format 1.2);
 * - the writer's bit-packing of integers, and the full reads' unpacking;
 * - the gather of single bit-packed integers (docs/FORMAT.md bit-packing), and of the
 *   sums since the last checkpoint (CHECKPOINTS, format 1.3) before them;
 * - the BYTE_SPLIT transform of float pages and its inverse (docs/FORMAT.md §5.1), for
 *   writers and full reads;
 * - the writer's FLOAT_DECIMAL exponent trials (docs/FORMAT.md §5.3): per exponent, how many
 *   sampled floats round-trip through an integer and the span of those integers;
 * - the writer's batch-mode gather of many small record batches' columns into one block.
 * The module is optional: fermion/format/pages.py, encodings.py and decimal_floats.py do
 * the same work in Python (ISA-L's or zlib's crc32 per block, the frame header read field
 * by field, one numpy strided copy per byte plane, numpy arrays of the trials) when it
 * cannot be imported.
 *
 * The CRC is CRC-32 as zlib computes it (reflected polynomial 0xEDB88320, initial value
 * and final xor 0xFFFFFFFF), by slicing-by-8 tables built once at import.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static uint32_t table[8][256];

static void build_tables(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = table[0][n];
        for (int t = 1; t < 8; t++) {
            c = table[0][c & 0xff] ^ (c >> 8);
            table[t][n] = c;
        }
    }
}

static uint32_t load_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

/* The CRC register after ``n`` more bytes (no initial or final inversion). */
static uint32_t crc32_tables(uint32_t c, const uint8_t *p, size_t n)
{
    while (n >= 8) { /* byte order independent: the words are assembled little-endian */
        uint32_t a = load_le32(p) ^ c, b = load_le32(p + 4);
        c = table[7][a & 0xff] ^ table[6][(a >> 8) & 0xff] ^ table[5][(a >> 16) & 0xff] ^
            table[4][a >> 24] ^ table[3][b & 0xff] ^ table[2][(b >> 8) & 0xff] ^
            table[1][(b >> 16) & 0xff] ^ table[0][b >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_CLMUL_PATH 1

/* Carry-less multiplication folding ("Fast CRC Computation for Generic Polynomials Using
 * PCLMULQDQ", Intel, 2009) for the reflected CRC-32 polynomial: four 128-bit lanes are
 * folded 64 bytes at a time, then into one lane, reduced to 64 and 32 bits and finished
 * by a Barrett reduction. The constants are x^k mod P(x) for the fold distances (bit
 * reflected, as the register is), P(x) itself and floor(x^64 / P(x)). ``n`` >= 64; the
 * bytes after the last whole 16 are left to the tables. */
__attribute__((target("pclmul,sse2"))) static uint32_t crc32_clmul(uint32_t c,
                                                                    const uint8_t *p,
                                                                    size_t n)
{
    const __m128i fold4 = _mm_set_epi64x(0x00000001c6e41596LL, 0x0000000154442bd4LL);
    const __m128i fold1 = _mm_set_epi64x(0x00000000ccaa009eLL, 0x00000001751997d0LL);
    const __m128i fold32 = _mm_set_epi64x(0, 0x0000000163cd6124LL);
    const __m128i barrett = _mm_set_epi64x(0x00000001f7011641LL, 0x00000001db710641LL);
    const __m128i low32 = _mm_set_epi32(0, 0, 0, -1);
    __m128i x0 = _mm_loadu_si128((const __m128i *)p);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)c));
    p += 64;
    n -= 64;
#define FOLD(x, k, d)                                                                   \
    x = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),                   \
                                    _mm_clmulepi64_si128(x, k, 0x11)), (d))
    while (n >= 64) {
        FOLD(x0, fold4, _mm_loadu_si128((const __m128i *)p));
        FOLD(x1, fold4, _mm_loadu_si128((const __m128i *)(p + 16)));
        FOLD(x2, fold4, _mm_loadu_si128((const __m128i *)(p + 32)));
        FOLD(x3, fold4, _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        n -= 64;
    }
    FOLD(x0, fold1, x1);
    FOLD(x0, fold1, x2);
    FOLD(x0, fold1, x3);
    while (n >= 16) {
        FOLD(x0, fold1, _mm_loadu_si128((const __m128i *)p));
        p += 16;
        n -= 16;
    }
#undef FOLD
    /* 128 -> 64 bits (appending 32 zero bits), 64 -> 32, then Barrett */
    x0 = _mm_xor_si128(_mm_srli_si128(x0, 8), _mm_clmulepi64_si128(x0, fold1, 0x10));
    x0 = _mm_xor_si128(_mm_srli_si128(x0, 4),
                       _mm_clmulepi64_si128(_mm_and_si128(x0, low32), fold32, 0x00));
    __m128i t = _mm_clmulepi64_si128(_mm_and_si128(x0, low32), barrett, 0x10);
    t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), barrett, 0x00);
    x0 = _mm_xor_si128(x0, t);
    c = (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(x0, 4));
    return crc32_tables(c, p, n);
}
#endif

static int use_clmul = 0; /* set at import when the CPU has PCLMULQDQ */

/* The CRC register after ``n`` more bytes, by the fastest way this CPU has. */
static uint32_t crc32_more(uint32_t c, const uint8_t *p, size_t n)
{
#ifdef HAVE_CLMUL_PATH
    if (use_clmul && n >= 64)
        return crc32_clmul(c, p, n);
#endif
    return crc32_tables(c, p, n);
}

static uint32_t crc32_of(const uint8_t *p, size_t n)
{
    return crc32_more(0xFFFFFFFFu, p, n) ^ 0xFFFFFFFFu;
}

static PyObject *crc32_py(PyObject *self, PyObject *args)
{
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "y*:crc32", &data))
        return NULL;
    uint32_t c;
    Py_BEGIN_ALLOW_THREADS
    c = crc32_of((const uint8_t *)data.buf, (size_t)data.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLong(c);
}

static PyObject *block_crcs(PyObject *self, PyObject *args)
{
    Py_buffer data;
    Py_ssize_t size;
    if (!PyArg_ParseTuple(args, "y*n:block_crcs", &data, &size))
        return NULL;
    if (size <= 0) {
        PyBuffer_Release(&data);
        PyErr_SetString(PyExc_ValueError, "block size must be positive");
        return NULL;
    }
    Py_ssize_t blocks = data.len / size + (data.len % size != 0);
    PyObject *out = PyBytes_FromStringAndSize(NULL, 4 * blocks);
    if (out == NULL) {
        PyBuffer_Release(&data);
        return NULL;
    }
    uint8_t *dst = (uint8_t *)PyBytes_AS_STRING(out);
    const uint8_t *src = (const uint8_t *)data.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < blocks; k++) {
        Py_ssize_t at = k * size, n = data.len - at < size ? data.len - at : size;
        uint32_t c = crc32_of(src + at, (size_t)n);
        for (int i = 0; i < 4; i++)
            dst[4 * k + i] = (uint8_t)(c >> (8 * i));
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    return out;
}

/* The CRC32 of every block holding part of [b, e) (inside the payload of ``len`` bytes)
 * whose flag is 0, against its expected little-endian uint32; a flag is set once its
 * block matched. -1 when all matched (or the range is empty), else the first that did not.
 */
static long long check_blocks(const uint8_t *data, Py_ssize_t len, Py_ssize_t size,
                              const uint8_t *expected, uint8_t *flags, int64_t b, int64_t e)
{
    if (e <= b)
        return -1;
    for (int64_t k = b / size; k <= (e - 1) / size; k++) {
        if (flags[k])
            continue;
        int64_t at = k * size, n = (int64_t)len - at < size ? (int64_t)len - at : (int64_t)size;
        if (crc32_of(data + at, (size_t)n) != load_le32(expected + 4 * k))
            return k;
        flags[k] = 1;
    }
    return -1;
}

/* One CRC32 and one done flag per block of ``len`` bytes: NULL, else what is wrong. */
static const char *check_tables(Py_ssize_t len, Py_ssize_t size, const Py_buffer *crcs,
                                const Py_buffer *done)
{
    if (size <= 0)
        return "block size must be positive";
    Py_ssize_t blocks = len / size + (len % size != 0);
    if (crcs->len != 4 * blocks || done->len != blocks)
        return "one CRC32 and one done flag per block";
    return NULL;
}

/* verify_ranges(payload, block_size, crcs, begins, ends, done) -> int
 *
 * For each range [begins[i], ends[i]) (int64, non-empty ones only), the CRC32 of every
 * block holding part of it whose done[k] is 0 is compared with crcs[k] (little-endian
 * uint32), and done[k] is set once it matched. Returns -1 when every block matched, else
 * the first block that did not (the blocks before it are marked done). ValueError, with
 * nothing read, for a range outside the payload or tables of the wrong size.
 */
static PyObject *verify_ranges(PyObject *self, PyObject *args)
{
    Py_buffer payload, crcs, begins, ends, done;
    Py_ssize_t size;
    if (!PyArg_ParseTuple(args, "y*ny*y*y*w*:verify_ranges", &payload, &size, &crcs, &begins,
                          &ends, &done))
        return NULL;
    const char *problem = check_tables(payload.len, size, &crcs, &done);
    if (problem == NULL && (begins.len != ends.len || begins.len % 8 != 0))
        problem = "begins and ends must be int64 arrays of one length";
    long long bad = -1;
    if (problem == NULL) {
        const uint8_t *data = (const uint8_t *)payload.buf, *expected = (const uint8_t *)crcs.buf;
        uint8_t *flags = (uint8_t *)done.buf;
        Py_ssize_t count = begins.len / 8;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < count; i++) { /* every range checked before any is read */
            int64_t b, e;
            memcpy(&b, (const char *)begins.buf + 8 * i, 8);
            memcpy(&e, (const char *)ends.buf + 8 * i, 8);
            if (e > b && (b < 0 || e > (int64_t)payload.len)) {
                problem = "a range lies outside the payload";
                break;
            }
        }
        for (Py_ssize_t i = 0; i < count && bad == -1 && problem == NULL; i++) {
            int64_t b, e;
            memcpy(&b, (const char *)begins.buf + 8 * i, 8);
            memcpy(&e, (const char *)ends.buf + 8 * i, 8);
            bad = check_blocks(data, payload.len, size, expected, flags, b, e);
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&payload);
    PyBuffer_Release(&crcs);
    PyBuffer_Release(&begins);
    PyBuffer_Release(&ends);
    PyBuffer_Release(&done);
    if (problem != NULL) {
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    return PyLong_FromLongLong(bad);
}

/* frames_fit(frames, starts, ends, sizes, first) -> int
 *
 * The zstd frames frames[starts[i]:ends[i]] (int64 arrays, as sizes), from i = first on,
 * checked as fermion.format.pages._check_frame checks them on its fast path: the magic
 * number; a frame header descriptor without the reserved bit and with the content
 * checksum flag; a content size field declaring exactly sizes[i] bytes; one zstd block
 * (last-block bit set, not the reserved type) whose end plus the 4-byte checksum is the
 * end of the range. Returns -1 when every frame passes, else the first that does not
 * (which the caller hands to the Python check: it raises, or walks a frame of several
 * blocks). ValueError for arrays of different lengths.
 */
static PyObject *frames_fit(PyObject *self, PyObject *args)
{
    Py_buffer frames, starts, ends, sizes;
    Py_ssize_t first;
    if (!PyArg_ParseTuple(args, "y*y*y*y*n:frames_fit", &frames, &starts, &ends, &sizes,
                          &first))
        return NULL;
    Py_ssize_t count = starts.len / 8;
    int bad_args = starts.len % 8 != 0 || ends.len != starts.len || sizes.len != starts.len;
    Py_ssize_t result = -1;
    if (!bad_args) {
        const uint8_t *base = (const uint8_t *)frames.buf;
        static const int dict_bytes[4] = {0, 1, 2, 4};
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = first < 0 ? 0 : first; i < count; i++) {
            int64_t b, e, size;
            memcpy(&b, (const char *)starts.buf + 8 * i, 8);
            memcpy(&e, (const char *)ends.buf + 8 * i, 8);
            memcpy(&size, (const char *)sizes.buf + 8 * i, 8);
            if (b < 0 || e < b || e > (int64_t)frames.len || e - b < 6) {
                result = i;
                break;
            }
            const uint8_t *f = base + b;
            int64_t n = e - b;
            uint8_t fhd = f[4];
            if (load_le32(f) != 0xFD2FB528u || (fhd & 0x08) || !(fhd & 0x04)) {
                result = i;
                break;
            }
            int single = (fhd & 0x20) != 0, code = fhd >> 6;
            int fcs = code == 0 ? (single ? 1 : 0) : (code == 1 ? 2 : (code == 2 ? 4 : 8));
            int64_t at = 4 + 1 + (single ? 0 : 1) + dict_bytes[fhd & 3] + fcs;
            if (fcs == 0 || at + 3 > n) {
                result = i;
                break;
            }
            uint64_t declared = 0;
            for (int k = 0; k < fcs; k++)
                declared |= (uint64_t)f[at - fcs + k] << (8 * k);
            if (fcs == 2)
                declared += 256;
            uint32_t block = (uint32_t)f[at] | ((uint32_t)f[at + 1] << 8) |
                             ((uint32_t)f[at + 2] << 16);
            uint32_t kind = (block >> 1) & 3;
            if (size < 0 || declared != (uint64_t)size || !(block & 1) || kind == 3 ||
                at + 3 + (kind == 1 ? 1 : (int64_t)(block >> 3)) + 4 != n) {
                result = i;
                break;
            }
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&frames);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&ends);
    PyBuffer_Release(&sizes);
    if (bad_args) {
        PyErr_SetString(PyExc_ValueError, "starts, ends and sizes must be int64 arrays of one length");
        return NULL;
    }
    return PyLong_FromSsize_t(result);
}

static uint64_t load_le64(const uint8_t *p)
{
    return (uint64_t)load_le32(p) | ((uint64_t)load_le32(p + 4) << 32);
}

#define ENTRY_SIZE 40 /* COLUMN_ENTRY_DTYPE */

/* What a metadata kernel returns: ``out`` when every check passed, None when one failed
 * (``fallback``: the caller's Python path then raises), NULL with the error set when a
 * Python call failed (``ok`` false). Takes the reference to ``out``. */
static PyObject *list_result(PyObject *out, int ok, int fallback)
{
    if (!ok) {
        Py_XDECREF(out);
        return NULL;
    }
    if (fallback) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    return out;
}

/* schema_find(area, hashes, names, hash_offset, capacity, columns_offset, num_columns)
 * -> list | None
 *
 * fermion.format.schema.SchemaIndex.lookup on a schema area held whole (``area``): for
 * each name (UTF-8 bytes) and its 64-bit name hash, the hash slots are probed linearly
 * from ``hash & (capacity - 1)`` until an empty slot; a slot whose tag is the hash's high
 * 32 bits names a column whose entry's hash and name are compared. Per name the column
 * found or -1. None when a slot, an entry or a name lies outside the area or a slot names
 * a column past num_columns (the caller then looks up in Python, which raises). */
static PyObject *schema_find(PyObject *self, PyObject *args)
{
    Py_buffer area;
    PyObject *hashes, *names;
    Py_ssize_t hash_offset, cap, columns_offset, num_columns;
    if (!PyArg_ParseTuple(args, "y*OOnnnn:schema_find", &area, &hashes, &names, &hash_offset,
                          &cap, &columns_offset, &num_columns))
        return NULL;
    PyObject *hs = PySequence_Fast(hashes, "hashes must be a sequence");
    PyObject *ns = hs ? PySequence_Fast(names, "names must be a sequence") : NULL;
    PyObject *out = NULL;
    int ok = ns != NULL;
    Py_ssize_t n = ok ? PySequence_Fast_GET_SIZE(hs) : 0;
    if (ok && (n != PySequence_Fast_GET_SIZE(ns) || cap <= 0 || (cap & (cap - 1)) ||
               hash_offset < 0 || columns_offset < 0)) {
        PyErr_SetString(PyExc_ValueError, "hashes and names of one length, capacity a power of 2");
        ok = 0;
    }
    if (ok && !(out = PyList_New(n)))
        ok = 0;
    const uint8_t *b = (const uint8_t *)area.buf;
    uint64_t len = (uint64_t)area.len, mask = (uint64_t)cap - 1;
    int fallback = 0;
    for (Py_ssize_t i = 0; ok && !fallback && i < n; i++) {
        uint64_t h = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(hs, i));
        if (h == (uint64_t)-1 && PyErr_Occurred()) {
            ok = 0;
            break;
        }
        char *name;
        Py_ssize_t name_len;
        if (PyBytes_AsStringAndSize(PySequence_Fast_GET_ITEM(ns, i), &name, &name_len) < 0) {
            ok = 0;
            break;
        }
        Py_ssize_t found = -1;
        uint32_t tag = (uint32_t)(h >> 32);
        for (uint64_t probe = 0; probe < (uint64_t)cap; probe++) {
            uint64_t at = (uint64_t)hash_offset + 8 * ((h + probe) & mask);
            if (at + 8 > len) {
                fallback = 1;
                break;
            }
            uint32_t col = load_le32(b + at + 4);
            if (col == 0)
                break;
            if (load_le32(b + at) != tag)
                continue;
            uint64_t c = (uint64_t)col - 1, e = (uint64_t)columns_offset + ENTRY_SIZE * c;
            if (c >= (uint64_t)num_columns || e + ENTRY_SIZE > len) {
                fallback = 1;
                break;
            }
            uint64_t name_at = load_le32(b + e + 8), name_size = load_le32(b + e + 12);
            if (name_at + name_size > len) {
                fallback = 1;
                break;
            }
            if (load_le64(b + e) == h && name_size == (uint64_t)name_len &&
                memcmp(b + name_at, name, (size_t)name_len) == 0) {
                found = (Py_ssize_t)c;
                break;
            }
        }
        if (fallback)
            break;
        PyObject *v = PyLong_FromSsize_t(found);
        if (!v) {
            ok = 0;
            break;
        }
        PyList_SET_ITEM(out, i, v);
    }
    Py_XDECREF(hs);
    Py_XDECREF(ns);
    PyBuffer_Release(&area);
    return list_result(out, ok, fallback);
}

/* schema_entries(area, columns, columns_offset, heap_end, num_nodes, node_ids_offset)
 * -> list | None
 *
 * fermion.format.schema.SchemaIndex.columns' checks of each column's ColumnEntry on a
 * schema area held whole: its name and field blob inside the heap, its node field ids
 * among the num_nodes ids, and the entry's CRC32 (the entry with its crc field zeroed,
 * then the name, blob and node id bytes). Per column (name, primitive code, flags,
 * stream count, blob offset, blob size, node id bytes); None when a check fails (the
 * caller then reads the entries in Python, which raises). */
static PyObject *schema_entries(PyObject *self, PyObject *args)
{
    Py_buffer area;
    PyObject *columns;
    Py_ssize_t columns_offset, heap_end, num_nodes, node_ids_offset;
    if (!PyArg_ParseTuple(args, "y*Onnnn:schema_entries", &area, &columns, &columns_offset,
                          &heap_end, &num_nodes, &node_ids_offset))
        return NULL;
    PyObject *cs = PySequence_Fast(columns, "columns must be a sequence");
    PyObject *out = NULL;
    int ok = cs != NULL, fallback = 0;
    Py_ssize_t n = ok ? PySequence_Fast_GET_SIZE(cs) : 0;
    if (ok && !(out = PyList_New(n)))
        ok = 0;
    const uint8_t *b = (const uint8_t *)area.buf;
    uint64_t len = (uint64_t)area.len;
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        Py_ssize_t c = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(cs, i));
        if (c == -1 && PyErr_Occurred()) {
            ok = 0;
            break;
        }
        uint64_t e = (uint64_t)columns_offset + ENTRY_SIZE * (uint64_t)c;
        if (c < 0 || columns_offset < 0 || e + ENTRY_SIZE > len) {
            fallback = 1;
            break;
        }
        const uint8_t *p = b + e;
        uint64_t name_at = load_le32(p + 8), name_size = load_le32(p + 12);
        uint64_t blob_at = load_le32(p + 16), blob_size = load_le32(p + 20);
        uint64_t first = load_le32(p + 24), nodes = (uint64_t)p[28] | ((uint64_t)p[29] << 8);
        uint64_t ids_at = (uint64_t)node_ids_offset + 4 * first, ids_size = 4 * nodes;
        if (name_at + name_size > (uint64_t)heap_end || blob_at + blob_size > (uint64_t)heap_end ||
            first + nodes > (uint64_t)num_nodes || name_at + name_size > len ||
            blob_at + blob_size > len || ids_at + ids_size > len || node_ids_offset < 0) {
            fallback = 1;
            break;
        }
        uint8_t entry[ENTRY_SIZE];
        memcpy(entry, p, ENTRY_SIZE);
        memset(entry + 32, 0, 4);
        uint32_t crc = crc32_more(0xFFFFFFFFu, entry, ENTRY_SIZE);
        crc = crc32_more(crc, b + name_at, (size_t)name_size);
        crc = crc32_more(crc, b + blob_at, (size_t)blob_size);
        crc = crc32_more(crc, b + ids_at, (size_t)ids_size);
        if ((crc ^ 0xFFFFFFFFu) != load_le32(p + 32)) {
            fallback = 1;
            break;
        }
        PyObject *item = Py_BuildValue("(y#IIInny#)", (const char *)(b + name_at),
                                       (Py_ssize_t)name_size, (unsigned int)p[30],
                                       (unsigned int)p[31], load_le32(p + 36),
                                       (Py_ssize_t)blob_at, (Py_ssize_t)blob_size,
                                       (const char *)(b + ids_at), (Py_ssize_t)ids_size);
        if (!item) {
            ok = 0;
            break;
        }
        PyList_SET_ITEM(out, i, item);
    }
    Py_XDECREF(cs);
    PyBuffer_Release(&area);
    return list_result(out, ok, fallback);
}

/* cmb_scan(raw, specs, num_stripes, num_rows, column, data_start, data_end) -> list | None
 *
 * The checks fermion.format.cmb.parse_cmb makes of one Column Metadata Block, made here
 * on its usual path (a lookup parses the CMB of every column it reads): the CRC32 of the
 * block after its header, the header's column, stripe and stream counts, the stripe row
 * counts adding up to num_rows, each stream directory record against ``specs`` (3 bytes
 * per stream the column's type implies: stream type, then node as little-endian u16), a
 * known descriptor type, descriptors inside the block, every non-empty chunk inside
 * [data_start, data_end), a FULL chunk's length zero exactly when its page count is, and
 * the PageMeta rows of a chunk of several pages inside the block, their sizes and counts
 * adding up to the chunk's. None when any check fails: the caller then parses the block
 * in Python, which raises the typed error. Else one tuple per stream: (descriptor type,
 * descriptor position, chunks), chunks a tuple of (stripe, page_meta_offset, num_pages)
 * for each FULL chunk of other than one page.
 */
static PyObject *cmb_scan(PyObject *self, PyObject *args)
{
    Py_buffer raw, specs;
    Py_ssize_t num_stripes, column;
    unsigned long long num_rows;
    long long data_start, data_end;
    if (!PyArg_ParseTuple(args, "y*y*nKnLL:cmb_scan", &raw, &specs, &num_stripes, &num_rows,
                          &column, &data_start, &data_end))
        return NULL;
    const uint8_t *b = (const uint8_t *)raw.buf;
    const uint8_t *sp = (const uint8_t *)specs.buf;
    uint64_t len = (uint64_t)raw.len;
    Py_ssize_t num_streams = specs.len / 3;
    PyObject *out = NULL;
    int ok = specs.len % 3 == 0 && num_stripes >= 0 && data_start >= 0 && data_end >= data_start &&
             len >= 16;
    if (ok) {
        uint32_t crc;
        if (len < (1u << 16)) { /* the usual CMB: a few hundred bytes, not worth a GIL handoff */
            crc = crc32_of(b + 16, (size_t)(len - 16));
        } else {
            Py_BEGIN_ALLOW_THREADS
            crc = crc32_of(b + 16, (size_t)(len - 16));
            Py_END_ALLOW_THREADS
        }
        ok = load_le32(b) == (uint64_t)num_streams && load_le32(b + 4) == (uint64_t)num_stripes &&
             load_le32(b + 8) == crc && (Py_ssize_t)load_le32(b + 12) == column &&
             16 + 4 * (uint64_t)num_stripes + 8 * (uint64_t)num_streams <= len;
    }
    if (ok) {
        uint64_t rows = 0;
        for (Py_ssize_t s = 0; s < num_stripes; s++)
            rows += load_le32(b + 16 + 4 * s);
        ok = rows == num_rows;
    }
    if (ok && !(out = PyList_New(num_streams)))
        ok = -1;
    const uint8_t *dir = b + 16 + 4 * (uint64_t)num_stripes;
    uint64_t start = (uint64_t)data_start, end = (uint64_t)data_end;
    for (Py_ssize_t k = 0; ok == 1 && k < num_streams; k++) {
        const uint8_t *rec = dir + 8 * k;
        uint32_t code = rec[0], pos = load_le32(rec + 4);
        uint32_t node = (uint32_t)rec[2] | ((uint32_t)rec[3] << 8);
        uint32_t want_node = (uint32_t)sp[3 * k + 1] | ((uint32_t)sp[3 * k + 2] << 8);
        if (rec[1] != sp[3 * k] || node != want_node || code > 3) {
            ok = 0;
            break;
        }
        PyObject *chunks = PyTuple_New(0);
        if (!chunks) {
            ok = -1;
            break;
        }
        if (code == 0 || code == 1) {
            uint64_t size = code == 0 ? 16 : 48;
            if ((uint64_t)pos + size * (uint64_t)num_stripes > len)
                ok = 0;
            for (Py_ssize_t s = 0; ok == 1 && s < num_stripes; s++) {
                const uint8_t *d = b + pos + size * s;
                uint64_t offset = (uint64_t)load_le32(d) | ((uint64_t)load_le32(d + 4) << 32);
                uint32_t length = load_le32(d + 8);
                int check = code == 0 ? length > 0 && length != 0xFFFFFFFFu : length > 0;
                if (check && (offset < start || offset > end || length > end - offset)) {
                    ok = 0;
                    break;
                }
                if (code == 0)
                    continue;
                uint32_t values = load_le32(d + 12), pages = load_le32(d + 36);
                uint32_t meta = load_le32(d + 40);
                if ((length == 0) != (pages == 0)) {
                    ok = 0;
                    break;
                }
                if (pages == 1)
                    continue;
                if (pages > 1) {
                    uint64_t sizes = 0, counts = 0;
                    if ((uint64_t)meta + 32 * (uint64_t)pages > len) {
                        ok = 0;
                        break;
                    }
                    for (uint32_t p = 0; p < pages; p++) {
                        sizes += load_le32(b + meta + 32 * (uint64_t)p);
                        counts += load_le32(b + meta + 32 * (uint64_t)p + 4);
                    }
                    if (sizes != length || counts != values) {
                        ok = 0;
                        break;
                    }
                }
                PyObject *one = Py_BuildValue("(nIn)", s, meta, (Py_ssize_t)pages);
                Py_ssize_t n = PyTuple_GET_SIZE(chunks);
                if (!one || _PyTuple_Resize(&chunks, n + 1) < 0) {
                    Py_XDECREF(one);
                    ok = -1;
                    break;
                }
                PyTuple_SET_ITEM(chunks, n, one);
            }
        }
        if (ok != 1) {
            Py_XDECREF(chunks);
            break;
        }
        PyObject *item = Py_BuildValue("(IIN)", code, pos, chunks);
        if (!item) {
            ok = -1;
            break;
        }
        PyList_SET_ITEM(out, k, item);
    }
    PyBuffer_Release(&raw);
    PyBuffer_Release(&specs);
    if (ok == 1)
        return out;
    Py_XDECREF(out);
    if (ok == -1)
        return NULL;
    Py_RETURN_NONE;
}

/* Value j of a stream bit-packed at w bits (mask: its low w bits) in the ``avail`` bytes
 * at ``data``; the caller has checked that it ends inside them. Bytes past ``avail`` are
 * never read (they count as zero, and the mask drops them anyway). */
static uint64_t packed_at(const uint8_t *data, uint64_t avail, uint64_t j, int w,
                          uint64_t mask)
{
    uint64_t bit = j * (uint64_t)w, at = bit >> 3, word = 0;
    uint64_t n = avail - at < 8 ? avail - at : 8;
    for (uint64_t k = 0; k < n; k++)
        word |= (uint64_t)data[at + k] << (8 * k);
    return (word >> (bit & 7)) & mask;
}

/* unpack_bits(buf, offset, w, out, itemsize) -> bool
 *
 * Every value of the stream bit-packed at ``w`` bits (1..64) from byte ``offset`` of
 * ``buf`` (docs/FORMAT.md: value i at bits [i*w, (i+1)*w), least significant bit first),
 * len(out) / itemsize of them, written to ``out`` as unsigned integers of ``itemsize``
 * bytes (1, 2, 4 or 8; a value wider than that keeps its low bits, as a cast would). What
 * fermion.format.bitpack.unpack_into does with eight strided numpy passes, in one. False,
 * with nothing written, when the values run past ``buf``.
 */
static PyObject *unpack_bits(PyObject *self, PyObject *args)
{
    Py_buffer buf, out;
    Py_ssize_t offset;
    int w, itemsize;
    if (!PyArg_ParseTuple(args, "y*niw*i:unpack_bits", &buf, &offset, &w, &out, &itemsize))
        return NULL;
    const char *problem = NULL;
    int fits = 1;
    if (w < 1 || w > 64 || (w > 56 && w != 64))
        problem = "bit width must be in [1, 56] or 64";
    else if ((itemsize != 1 && itemsize != 2 && itemsize != 4 && itemsize != 8) ||
             out.len % itemsize != 0)
        problem = "out must hold whole integers of 1, 2, 4 or 8 bytes";
    uint64_t n = problem ? 0 : (uint64_t)(out.len / itemsize);
    if (problem == NULL && (offset < 0 || offset > buf.len ||
                            (n * (uint64_t)w + 7) / 8 > (uint64_t)(buf.len - offset)))
        fits = 0;
    if (problem == NULL && fits && n) {
        const uint8_t *data = (const uint8_t *)buf.buf + offset;
        uint64_t avail = (uint64_t)(buf.len - offset);
        uint64_t mask = w == 64 ? ~(uint64_t)0 : (((uint64_t)1 << w) - 1);
        /* values whose 8-byte word lies inside buf: read in place; the rest by packed_at */
        uint64_t direct = avail >= 8 ? ((avail - 8) * 8) / (uint64_t)w + 1 : 0;
        if (direct > n)
            direct = n;
        uint8_t *dst = (uint8_t *)out.buf;
        /* a few values (a point read's segment): not worth handing the GIL to another thread */
        PyThreadState *saved = n >= 16384 ? PyEval_SaveThread() : NULL;
        uint64_t bit = 0;
        switch (itemsize) {
#define UNPACK(T)                                                                      \
    for (uint64_t i = 0; i < direct; i++, bit += (uint64_t)w) {                        \
        T v = (T)((load_le64(data + (bit >> 3)) >> (bit & 7)) & mask);                 \
        memcpy(dst + sizeof(T) * i, &v, sizeof(T));                                    \
    }                                                                                  \
    for (uint64_t i = direct; i < n; i++) {                                            \
        T v = (T)packed_at(data, avail, i, w, mask);                                   \
        memcpy(dst + sizeof(T) * i, &v, sizeof(T));                                    \
    }                                                                                  \
    break;
        case 1:
            UNPACK(uint8_t)
        case 2:
            UNPACK(uint16_t)
        case 4:
            UNPACK(uint32_t)
        default:
            UNPACK(uint64_t)
#undef UNPACK
        }
        if (saved != NULL)
            PyEval_RestoreThread(saved);
    }
    PyBuffer_Release(&buf);
    PyBuffer_Release(&out);
    return problem != NULL ? PyErr_Format(PyExc_ValueError, "%s", problem)
                           : PyBool_FromLong(fits);
}

/* pack_bits(values, w, out) -> bool
 *
 * The writer's inverse of unpack_bits: ``values`` (native uint64, each below 2**w) bit-packed
 * at ``w`` bits (1..56 or 64; value i at bits [i*w, (i+1)*w), least significant bit first)
 * into ``out``, exactly (n * w + 7) / 8 bytes; what fermion.format.bitpack.pack does with
 * eight strided numpy passes over 64-bit words, in one. False, with ``out`` partly
 * written, when a value does not fit in ``w`` bits (the caller then packs in Python).
 */
static PyObject *pack_bits(PyObject *self, PyObject *args)
{
    Py_buffer values, out;
    int w;
    if (!PyArg_ParseTuple(args, "y*iw*:pack_bits", &values, &w, &out))
        return NULL;
    const char *problem = NULL;
    int fits = 1;
    uint64_t n = (uint64_t)(values.len / 8);
    if (w < 1 || w > 64 || (w > 56 && w != 64))
        problem = "bit width must be in [1, 56] or 64";
    else if (values.len % 8 != 0 || (uint64_t)out.len != (n * (uint64_t)w + 7) / 8)
        problem = "values must be uint64 and out exactly their packed size";
    if (problem == NULL && n) {
        const uint8_t *src = (const uint8_t *)values.buf;
        uint8_t *dst = (uint8_t *)out.buf;
        PyThreadState *saved = n >= 16384 ? PyEval_SaveThread() : NULL;
        uint64_t acc = 0; /* the bits not yet written, from bit 0 */
        int have = 0;     /* how many: 0..63 */
        for (uint64_t i = 0; i < n; i++) {
            uint64_t v;
            memcpy(&v, src + 8 * i, 8);
            if (w < 64 && (v >> w) != 0) {
                fits = 0;
                break;
            }
            acc |= v << have; /* have < 64 */
            if (have + w >= 64) {
                for (int b = 0; b < 8; b++)
                    *dst++ = (uint8_t)(acc >> (8 * b));
                acc = have ? v >> (64 - have) : 0;
                have = have + w - 64;
            } else {
                have += w;
            }
        }
        for (int b = 0; fits && b < (have + 7) / 8; b++)
            *dst++ = (uint8_t)(acc >> (8 * b));
        if (saved != NULL)
            PyEval_RestoreThread(saved);
    }
    PyBuffer_Release(&values);
    PyBuffer_Release(&out);
    return problem != NULL ? PyErr_Format(PyExc_ValueError, "%s", problem)
                           : PyBool_FromLong(fits);
}

/* take_binary(parts, offset_size) -> (offsets, data) | None
 *
 * The values of consecutive DICTIONARY pages materialised as one binary column
 * (fermion.format.encodings.materialize_dictionaries): ``parts`` a sequence of
 * (offsets, data, indices) per page, its dictionary's int64 value offsets (entries + 1),
 * the dictionary's bytes and the page's int64 indices. Returns the column's offsets from
 * 0 (``offset_size`` bytes each, 4 or 8, native order) and its bytes. None, with nothing
 * returned, when a dictionary's offsets are negative, decreasing or past its bytes, an
 * index is outside its dictionary, or the bytes exceed what the offsets can hold (the
 * caller then takes the Arrow path, which raises or copes). A value of up to TAKE_WIDE
 * bytes is copied as TAKE_WIDE bytes (no call per value): each dictionary is copied first
 * with TAKE_WIDE bytes of padding, and the column's bytes are allocated with as many.
 */
#define TAKE_WIDE 32

typedef struct {
    Py_buffer offsets, data, indices;
    uint8_t *padded; /* the dictionary's bytes, then TAKE_WIDE zero bytes */
} TakePart;

/* Offset ``row`` of a column of 4- or 8-byte offsets (native order) set to ``at``. */
static void put_offset(char *out, uint64_t row, uint64_t at, int size)
{
    if (size == 4) {
        int32_t o = (int32_t)at;
        memcpy(out + 4 * row, &o, 4);
    } else {
        int64_t o = (int64_t)at;
        memcpy(out + 8 * row, &o, 8);
    }
}

/* Whether a part's dictionary offsets start at or after 0, never decrease and end inside
 * its bytes; then its padded copy is made (0 when that allocation fails: *nomem set). */
static int take_part_ready(TakePart *p, int *nomem)
{
    const uint8_t *offs = (const uint8_t *)p->offsets.buf;
    Py_ssize_t entries = p->offsets.len / 8 - 1;
    int64_t prev = 0;
    for (Py_ssize_t j = 0; j <= entries; j++) {
        int64_t o = (int64_t)load_le64(offs + 8 * j);
        if (o < prev || o > (int64_t)p->data.len)
            return 0;
        prev = o;
    }
    p->padded = PyMem_RawMalloc((size_t)p->data.len + TAKE_WIDE);
    if (p->padded == NULL) {
        *nomem = 1;
        return 0;
    }
    memcpy(p->padded, p->data.buf, (size_t)p->data.len);
    memset(p->padded + p->data.len, 0, TAKE_WIDE);
    return 1;
}

static PyObject *take_binary(PyObject *self, PyObject *args)
{
    PyObject *parts_obj;
    int offset_size;
    if (!PyArg_ParseTuple(args, "Oi:take_binary", &parts_obj, &offset_size))
        return NULL;
    if (offset_size != 4 && offset_size != 8) {
        PyErr_SetString(PyExc_ValueError, "offset_size must be 4 or 8");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(parts_obj, "parts must be a sequence");
    if (!seq)
        return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq), got = 0;
    TakePart *parts = PyMem_Calloc(count ? (size_t)count : 1, sizeof(TakePart));
    PyObject *result = NULL, *offsets_out = NULL, *data_out = NULL;
    int ok = parts != NULL, nomem = 0;
    if (!ok)
        PyErr_NoMemory();
    for (; ok && got < count; got++) {
        TakePart *p = &parts[got];
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, got), "y*y*y*:take_binary part",
                              &p->offsets, &p->data, &p->indices)) {
            ok = 0;
            break;
        }
        if (p->offsets.len % 8 || p->offsets.len < 8 || p->indices.len % 8) {
            PyBuffer_Release(&p->offsets);
            PyBuffer_Release(&p->data);
            PyBuffer_Release(&p->indices);
            PyErr_SetString(PyExc_ValueError, "offsets and indices must be int64 arrays");
            ok = 0;
            break;
        }
    }
    uint64_t n = 0, total = 0;
    int fits = 1;
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t k = 0; fits && k < count; k++) {
            TakePart *p = &parts[k];
            if (!take_part_ready(p, &nomem)) {
                fits = 0;
                break;
            }
            const uint8_t *offs = (const uint8_t *)p->offsets.buf;
            const char *idx = (const char *)p->indices.buf;
            int64_t entries = p->offsets.len / 8 - 1;
            Py_ssize_t m = p->indices.len / 8;
            for (Py_ssize_t i = 0; i < m; i++) {
                int64_t j;
                memcpy(&j, idx + 8 * i, 8);
                if (j < 0 || j >= entries) {
                    fits = 0;
                    break;
                }
                total += load_le64(offs + 8 * j + 8) - load_le64(offs + 8 * j);
            }
            n += (uint64_t)m;
        }
        Py_END_ALLOW_THREADS
        uint64_t limit = offset_size == 4 ? 0x7FFFFFFFu : (uint64_t)PY_SSIZE_T_MAX - TAKE_WIDE;
        if (fits && (total > limit || (n + 1) > (uint64_t)PY_SSIZE_T_MAX / 8))
            fits = 0;
        if (nomem) {
            PyErr_NoMemory();
            ok = 0;
        }
    }
    if (ok && fits) {
        offsets_out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((n + 1) * offset_size));
        data_out = offsets_out ? PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(total + TAKE_WIDE))
                               : NULL;
        ok = data_out != NULL;
    }
    if (ok && fits) {
        uint8_t *dst = (uint8_t *)PyBytes_AS_STRING(data_out);
        char *out_offs = PyBytes_AS_STRING(offsets_out);
        Py_BEGIN_ALLOW_THREADS
        uint64_t at = 0, row = 0;
        for (Py_ssize_t k = 0; k < count; k++) {
            const TakePart *p = &parts[k];
            const uint8_t *offs = (const uint8_t *)p->offsets.buf;
            const char *idx = (const char *)p->indices.buf;
            Py_ssize_t m = p->indices.len / 8;
            for (Py_ssize_t i = 0; i < m; i++, row++) {
                put_offset(out_offs, row, at, offset_size);
                int64_t j;
                memcpy(&j, idx + 8 * i, 8);
                uint64_t a = load_le64(offs + 8 * j), len = load_le64(offs + 8 * j + 8) - a;
                if (len <= TAKE_WIDE) /* (both buffers have TAKE_WIDE bytes to spare) */
                    memcpy(dst + at, p->padded + a, TAKE_WIDE);
                else
                    memcpy(dst + at, p->padded + a, (size_t)len);
                at += len;
            }
        }
        put_offset(out_offs, row, at, offset_size);
        Py_END_ALLOW_THREADS
        ok = _PyBytes_Resize(&data_out, (Py_ssize_t)total) == 0; /* the spare bytes dropped */
        if (ok)
            result = PyTuple_Pack(2, offsets_out, data_out);
    }
    for (Py_ssize_t k = 0; k < got; k++) {
        PyMem_RawFree(parts[k].padded);
        PyBuffer_Release(&parts[k].offsets);
        PyBuffer_Release(&parts[k].data);
        PyBuffer_Release(&parts[k].indices);
    }
    PyMem_Free(parts);
    Py_DECREF(seq);
    Py_XDECREF(offsets_out);
    Py_XDECREF(data_out);
    if (!ok)
        return NULL;
    if (!fits)
        Py_RETURN_NONE;
    return result;
}

/* Whether every int64 of ``positions`` is in [0, limit). */
static int all_below(const Py_buffer *positions, uint64_t limit)
{
    for (Py_ssize_t i = 0; i < positions->len / 8; i++) {
        int64_t k;
        memcpy(&k, (const char *)positions->buf + 8 * i, 8);
        if (k < 0 || (uint64_t)k >= limit)
            return 0;
    }
    return 1;
}

/* verify_packed(payload, block_size, crcs, offset, w, rows, done) -> int
 *
 * verify_ranges for the bytes of bit-packed values: row r (int64) of the stream packed at
 * ``w`` bits (1..64) from payload byte ``offset`` is the range [offset + r*w/8,
 * offset + ((r+1)*w + 7)/8). Returns -1 or the first block that did not match, as
 * verify_ranges. ValueError, with nothing read, for a negative row, a range outside the
 * payload, a bad width or tables of the wrong size.
 */
static PyObject *verify_packed(PyObject *self, PyObject *args)
{
    Py_buffer payload, crcs, rows, done;
    Py_ssize_t size, offset;
    int w;
    if (!PyArg_ParseTuple(args, "y*ny*niy*w*:verify_packed", &payload, &size, &crcs, &offset,
                          &w, &rows, &done))
        return NULL;
    const char *problem = check_tables(payload.len, size, &crcs, &done);
    if (problem == NULL && (w < 1 || w > 64))
        problem = "bit width must be in [1, 64]";
    else if (problem == NULL && rows.len % 8 != 0)
        problem = "rows must be an int64 array";
    else if (problem == NULL && rows.len > 0 && (offset < 0 || offset > payload.len))
        problem = "a range lies outside the payload"; /* no rows: nothing to read */
    long long bad = -1;
    if (problem == NULL) {
        const uint8_t *data = (const uint8_t *)payload.buf, *expected = (const uint8_t *)crcs.buf;
        uint8_t *flags = (uint8_t *)done.buf;
        Py_ssize_t count = rows.len / 8;
        /* rows whose bits end inside the payload: below this bound, no overflow below */
        uint64_t limit = ((uint64_t)(payload.len - offset) * 8) / (uint64_t)w;
        Py_BEGIN_ALLOW_THREADS
        if (!all_below(&rows, limit))
            problem = "a range lies outside the payload";
        for (Py_ssize_t i = 0; i < count && bad == -1 && problem == NULL; i++) {
            int64_t r;
            memcpy(&r, (const char *)rows.buf + 8 * i, 8);
            uint64_t bit = (uint64_t)r * (uint64_t)w;
            int64_t b = offset + (int64_t)(bit >> 3);
            int64_t e = offset + (int64_t)((bit + (uint64_t)w + 7) >> 3);
            bad = check_blocks(data, payload.len, size, expected, flags, b, e);
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&payload);
    PyBuffer_Release(&crcs);
    PyBuffer_Release(&rows);
    PyBuffer_Release(&done);
    if (problem != NULL) {
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    return PyLong_FromLongLong(bad);
}

/* gather_bits(buf, offset, w, indices, out) -> bool
 *
 * Values ``indices`` (int64) of the stream bit-packed at ``w`` bits (1..64) from byte
 * ``offset`` of ``buf`` (docs/FORMAT.md: value i at bits [i*w, (i+1)*w), least
 * significant bit first), written to ``out`` (uint64, one per index). False, with nothing
 * written, when an index is negative or its value runs past ``buf``.
 */
static PyObject *gather_bits(PyObject *self, PyObject *args)
{
    Py_buffer buf, indices, out;
    Py_ssize_t offset;
    int w;
    if (!PyArg_ParseTuple(args, "y*niy*w*:gather_bits", &buf, &offset, &w, &indices, &out))
        return NULL;
    const char *problem = NULL;
    int fits = 1;
    Py_ssize_t count = indices.len / 8;
    if (w < 1 || w > 64)
        problem = "bit width must be in [1, 64]";
    else if (indices.len % 8 != 0 || out.len != indices.len)
        problem = "indices and out must be 8-byte arrays of one length";
    else if (offset < 0 || offset > buf.len)
        fits = 0;
    if (problem == NULL && fits) {
        const uint8_t *data = (const uint8_t *)buf.buf + offset;
        uint64_t avail = (uint64_t)(buf.len - offset);
        uint64_t limit = avail * 8 / (uint64_t)w; /* indices below this end inside buf */
        uint64_t mask = w == 64 ? ~(uint64_t)0 : (((uint64_t)1 << w) - 1);
        uint8_t *dst = (uint8_t *)out.buf;
        Py_BEGIN_ALLOW_THREADS
        fits = all_below(&indices, limit);
        for (Py_ssize_t i = 0; fits && i < count; i++) {
            int64_t k;
            memcpy(&k, (const char *)indices.buf + 8 * i, 8);
            uint64_t value = packed_at(data, avail, (uint64_t)k, w, mask);
            memcpy(dst + 8 * i, &value, 8);
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&buf);
    PyBuffer_Release(&indices);
    PyBuffer_Release(&out);
    if (problem != NULL) {
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    return PyBool_FromLong(fits);
}

/* segment_sums(buf, offset, end, w, interval, rows, before, value) -> bool
 *
 * For each row r (int64) of the stream bit-packed at ``w`` bits (1..64) from byte
 * ``offset`` of ``buf``, whose bytes end at ``end``: value[r] = packed[r] and before[r] =
 * packed[s] + ... + packed[r - 1] for s = r - r % interval (the sum since the last
 * checkpoint, int64 arithmetic that wraps), both int64. False, with nothing defined
 * written, when a row is negative or its value runs past ``end`` or ``buf``.
 */
static PyObject *segment_sums(PyObject *self, PyObject *args)
{
    Py_buffer buf, rows, before, value;
    Py_ssize_t offset, end, interval;
    int w;
    if (!PyArg_ParseTuple(args, "y*nniny*w*w*:segment_sums", &buf, &offset, &end, &w,
                          &interval, &rows, &before, &value))
        return NULL;
    const char *problem = NULL;
    int fits = 1;
    Py_ssize_t count = rows.len / 8;
    if (w < 1 || w > 64 || interval < 1)
        problem = "bit width must be in [1, 64] and the interval positive";
    else if (rows.len % 8 != 0 || before.len != rows.len || value.len != rows.len)
        problem = "rows, before and value must be 8-byte arrays of one length";
    else if (offset < 0 || end < offset || end > buf.len)
        fits = 0;
    if (problem == NULL && fits) {
        const uint8_t *data = (const uint8_t *)buf.buf + offset;
        uint64_t avail = (uint64_t)(end - offset);
        uint64_t limit = avail * 8 / (uint64_t)w; /* values below this end before ``end`` */
        uint64_t mask = w == 64 ? ~(uint64_t)0 : (((uint64_t)1 << w) - 1);
        Py_BEGIN_ALLOW_THREADS
        fits = all_below(&rows, limit);
        for (Py_ssize_t i = 0; fits && i < count; i++) {
            int64_t r;
            memcpy(&r, (const char *)rows.buf + 8 * i, 8);
            uint64_t sum = 0; /* unsigned: wraps as the int64 running sum does */
            for (uint64_t j = (uint64_t)r - (uint64_t)r % (uint64_t)interval; j < (uint64_t)r;
                 j++)
                sum += packed_at(data, avail, j, w, mask);
            uint64_t v = packed_at(data, avail, (uint64_t)r, w, mask);
            int64_t s = (int64_t)sum, x = (int64_t)v;
            memcpy((char *)before.buf + 8 * i, &s, 8);
            memcpy((char *)value.buf + 8 * i, &x, 8);
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&buf);
    PyBuffer_Release(&rows);
    PyBuffer_Release(&before);
    PyBuffer_Release(&value);
    if (problem != NULL) {
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    return PyBool_FromLong(fits);
}

/* BYTE_SPLIT (docs/FORMAT.md §5.1): ``n`` values of ``w`` bytes into ``w`` planes of ``n``
 * bytes (byte j of value i at plane j, offset i), and back. The loops are inlined with
 * the widths 4 and 8 as constants, which the compiler vectorises; width-8 splits use SSE2
 * byte unpacks on x86-64 (a 16 x 8 byte transpose per step). */
static inline void split_any(const uint8_t *restrict src, uint8_t *restrict dst, size_t n,
                             size_t w)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < w; j++)
            dst[j * n + i] = src[i * w + j];
}

static inline void join_any(const uint8_t *restrict src, uint8_t *restrict dst, size_t n,
                            size_t w)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < w; j++)
            dst[i * w + j] = src[j * n + i];
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* 16 values at a time: two rounds of byte unpacks gather each value's bytes by plane in
 * groups of 4 values, 32- and 64-bit unpacks then join the groups of a plane. */
static void split8(const uint8_t *restrict src, uint8_t *restrict dst, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i x[8], a[8], b[8];
        for (int k = 0; k < 8; k++)
            x[k] = _mm_loadu_si128((const __m128i *)(src + i * 8 + 16 * k));
        for (int k = 0; k < 4; k++) { /* a[2k]: values 4k and 4k+2 byte by byte; a[2k+1]: 4k+1, 4k+3 */
            a[2 * k] = _mm_unpacklo_epi8(x[2 * k], x[2 * k + 1]);
            a[2 * k + 1] = _mm_unpackhi_epi8(x[2 * k], x[2 * k + 1]);
        }
        for (int k = 0; k < 4; k++) { /* b[2k]: bytes 0-3 of values 4k..4k+3, by byte */
            b[2 * k] = _mm_unpacklo_epi8(a[2 * k], a[2 * k + 1]);
            b[2 * k + 1] = _mm_unpackhi_epi8(a[2 * k], a[2 * k + 1]);
        }
        for (int h = 0; h < 2; h++) { /* planes 4h..4h+3 */
            __m128i c0 = _mm_unpacklo_epi32(b[h], b[2 + h]);
            __m128i c1 = _mm_unpackhi_epi32(b[h], b[2 + h]);
            __m128i c2 = _mm_unpacklo_epi32(b[4 + h], b[6 + h]);
            __m128i c3 = _mm_unpackhi_epi32(b[4 + h], b[6 + h]);
            _mm_storeu_si128((__m128i *)(dst + (4 * h + 0) * n + i), _mm_unpacklo_epi64(c0, c2));
            _mm_storeu_si128((__m128i *)(dst + (4 * h + 1) * n + i), _mm_unpackhi_epi64(c0, c2));
            _mm_storeu_si128((__m128i *)(dst + (4 * h + 2) * n + i), _mm_unpacklo_epi64(c1, c3));
            _mm_storeu_si128((__m128i *)(dst + (4 * h + 3) * n + i), _mm_unpackhi_epi64(c1, c3));
        }
    }
    for (; i < n; i++)
        for (size_t j = 0; j < 8; j++)
            dst[j * n + i] = src[i * 8 + j];
}
#else
static void split8(const uint8_t *restrict src, uint8_t *restrict dst, size_t n)
{
    split_any(src, dst, n, 8);
}
#endif

/* byte_planes(src, dst, width, join) -> None
 *
 * ``join`` false: the BYTE_SPLIT planes of the ``width``-byte values in ``src`` written to
 * ``dst``; true: the values of the planes in ``src`` written to ``dst``. ValueError, with
 * nothing written, when the width is not in [1, 255], or the buffers differ in size or
 * do not hold whole values.
 */
static PyObject *byte_planes(PyObject *self, PyObject *args)
{
    Py_buffer src, dst;
    int width, join;
    if (!PyArg_ParseTuple(args, "y*w*ip:byte_planes", &src, &dst, &width, &join))
        return NULL;
    const char *problem = NULL;
    if (width < 1 || width > 255)
        problem = "width must be in [1, 255]";
    else if (src.len != dst.len || src.len % width != 0)
        problem = "src and dst must be one size, a whole number of values";
    if (problem == NULL) {
        const uint8_t *in = (const uint8_t *)src.buf;
        uint8_t *out = (uint8_t *)dst.buf;
        size_t n = (size_t)(src.len / width);
        Py_BEGIN_ALLOW_THREADS
        /* constant widths, inlined: the compiler vectorises those loops */
        if (width == 4)
            join ? join_any(in, out, n, 4) : split_any(in, out, n, 4);
        else if (width == 8)
            join ? join_any(in, out, n, 8) : split8(in, out, n);
        else
            join ? join_any(in, out, n, (size_t)width) : split_any(in, out, n, (size_t)width);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    if (problem != NULL) {
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* decimal_trials(values, width, kernel, pow10, pow10_inv, lo, hi, out) -> None
 *
 * For each exponent e in [lo, hi), over the ``width``-byte floats in ``values``: k =
 * rint(v * pow10[e]) (float64, ties to even) where |k| < 2**53 ("fits", else k = 0); v
 * round-trips when the decoding kernel (0: float64(k) / pow10[e], 1: float64(k) *
 * pow10_inv[e], cast to float32 when ``width`` is 4) gives back its exact bit pattern.
 * Writes four int64 rows of hi - lo to ``out``: values that do not fit, values that do
 * not round-trip, and the smallest and largest k of those that do (INT64_MAX and
 * INT64_MIN when none does). fermion/format/decimal_floats.py computes the same with
 * numpy. Every step is one IEEE operation (no contraction into fused multiply-adds is
 * possible), so the results are those numpy's float64 arithmetic gives.
 */
static PyObject *decimal_trials(PyObject *self, PyObject *args)
{
    Py_buffer vals, p10, inv, out;
    int width, kernel, lo, hi;
    if (!PyArg_ParseTuple(args, "y*iiy*y*iiw*:decimal_trials", &vals, &width, &kernel, &p10,
                          &inv, &lo, &hi, &out))
        return NULL;
    const char *problem = NULL;
    Py_ssize_t exps = p10.len / (Py_ssize_t)sizeof(double);
    if (width != 4 && width != 8)
        problem = "width must be 4 or 8";
    else if (kernel != 0 && kernel != 1)
        problem = "kernel must be 0 or 1";
    else if (vals.len % width != 0)
        problem = "values must be a whole number of floats";
    else if (p10.len != inv.len || p10.len % (Py_ssize_t)sizeof(double) != 0)
        problem = "pow10 and pow10_inv must be float64 arrays of one length";
    else if (lo < 0 || hi < lo || hi > exps)
        problem = "exponents outside pow10";
    else if (out.len != (Py_ssize_t)(4 * (size_t)(hi - lo) * sizeof(int64_t)))
        problem = "out must hold 4 * (hi - lo) int64";
    if (problem == NULL) {
        size_t n = (size_t)(vals.len / width);
        const uint8_t *v = (const uint8_t *)vals.buf;
        const double *pw = (const double *)p10.buf, *pinv = (const double *)inv.buf;
        size_t rows = (size_t)(hi - lo);
        int64_t *res = (int64_t *)out.buf;
        const double limit = 9007199254740992.0; /* 2**53 */
        Py_BEGIN_ALLOW_THREADS
        for (size_t j = 0; j < rows; j++) {
            int e = lo + (int)j;
            int64_t unfit = 0, misses = 0, kmin = INT64_MAX, kmax = INT64_MIN;
            for (size_t i = 0; i < n; i++) {
                double x;
                uint64_t bits;
                if (width == 4) {
                    uint32_t b32;
                    float f;
                    memcpy(&b32, v + 4 * i, 4);
                    memcpy(&f, &b32, 4);
                    x = (double)f;
                    bits = b32;
                } else {
                    memcpy(&bits, v + 8 * i, 8);
                    memcpy(&x, &bits, 8);
                }
                double scaled = nearbyint(x * pw[e]);
                if (!(fabs(scaled) < limit)) { /* NaN and infinities too */
                    unfit++;
                    misses++;
                    continue;
                }
                int64_t k = (int64_t)scaled;
                double back = kernel ? (double)k * pinv[e] : (double)k / pw[e];
                int same;
                if (width == 4) {
                    float b = (float)back;
                    uint32_t bb;
                    memcpy(&bb, &b, 4);
                    same = bb == (uint32_t)bits;
                } else {
                    uint64_t bb;
                    memcpy(&bb, &back, 8);
                    same = bb == bits;
                }
                if (!same) {
                    misses++;
                    continue;
                }
                if (k < kmin)
                    kmin = k;
                if (k > kmax)
                    kmax = k;
            }
            res[j] = unfit;
            res[rows + j] = misses;
            res[2 * rows + j] = kmin;
            res[3 * rows + j] = kmax;
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&vals);
    PyBuffer_Release(&p10);
    PyBuffer_Release(&inv);
    PyBuffer_Release(&out);
    if (problem != NULL) {
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    Py_RETURN_NONE;
}


/* gather_stream(stream_capsule, format, width, columns, out, rows, row_start) -> int
 *
 * The writer's batch-mode gather (fermion/format/writer.py): the record batches of an
 * Arrow C stream (``RecordBatchReader.__arrow_c_stream__()``: struct arrays, one child per
 * column) whose children ``columns`` (int64 indices) all have the Arrow ``format`` (e.g.
 * "f", float32) of ``width`` bytes a value, copied into ``out``, a C-contiguous
 * (len(columns), ``rows``) array: child columns[j] of the stream's batches goes to row
 * j, the first batch's values at ``row_start``, each next batch's right after them. One
 * memcpy per column of a batch; the GIL is released throughout (the stream takes it when
 * it asks Python for the next batch). The schema is exported once, each batch's array as
 * it comes: one C++ export a batch and no Python object, where a capsule pair per batch
 * exported the schema too. Returns the rows gathered, or -1 (having stopped there) at the
 * first batch whose selected children may hold nulls (a validity buffer and a null count
 * other than 0, which may be -1: not counted yet), have another buffer layout, are
 * shorter than the batch or would overflow ``out``, or when the schema does not match:
 * the caller then gathers another way. A stream error raises RuntimeError.
 * Every array it gets is released; the capsule's owner releases the stream.
 */
struct ArrowSchema {
    const char *format;
    const char *name;
    const char *metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema **children;
    struct ArrowSchema *dictionary;
    void (*release)(struct ArrowSchema *);
    void *private_data;
};

struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};

struct ArrowArrayStream {
    int (*get_schema)(struct ArrowArrayStream *, struct ArrowSchema *out);
    int (*get_next)(struct ArrowArrayStream *, struct ArrowArray *out);
    const char *(*get_last_error)(struct ArrowArrayStream *);
    void (*release)(struct ArrowArrayStream *);
    void *private_data;
};

/* whether the selected children of a stream's schema are all of ``format`` */
static int schema_fits(const struct ArrowSchema *schema, const char *format,
                       const int64_t *columns, Py_ssize_t n)
{
    if (strcmp(schema->format, "+s") != 0)
        return 0;
    for (Py_ssize_t j = 0; j < n; j++) {
        if (columns[j] < 0 || columns[j] >= schema->n_children
            || strcmp(schema->children[columns[j]]->format, format) != 0)
            return 0;
    }
    return 1;
}

/* copies one batch's selected children into their rows of ``dst`` at ``row_start``;
 * 0 (nothing copied) when one of them cannot be copied so */
static int copy_batch(const struct ArrowArray *array, const int64_t *columns, Py_ssize_t n,
                      size_t width, uint8_t *dst, int64_t rows, int64_t row_start)
{
    if (array->length < 0 || array->offset < 0 || array->length > rows - row_start)
        return 0;
    for (Py_ssize_t j = 0; j < n; j++) {
        const struct ArrowArray *child =
            columns[j] < array->n_children ? array->children[columns[j]] : NULL;
        if (child == NULL || (child->null_count != 0 && child->buffers[0] != NULL)
            || child->n_buffers != 2 || child->n_children != 0 || child->buffers[1] == NULL
            || child->offset < 0 || child->length < array->offset + array->length)
            return 0;
    }
    size_t size = (size_t)array->length * width;
    for (Py_ssize_t j = 0; j < n; j++) {
        const struct ArrowArray *child = array->children[columns[j]];
        const uint8_t *src =
            (const uint8_t *)child->buffers[1] + (size_t)(child->offset + array->offset) * width;
        memcpy(dst + ((size_t)j * (size_t)rows + (size_t)row_start) * width, src, size);
    }
    return 1;
}

static PyObject *gather_stream(PyObject *self, PyObject *args)
{
    PyObject *capsule;
    const char *format;
    int width;
    Py_buffer cols, out;
    Py_ssize_t rows, row_start;
    if (!PyArg_ParseTuple(args, "Osiy*w*nn:gather_stream", &capsule, &format, &width, &cols,
                          &out, &rows, &row_start))
        return NULL;
    struct ArrowArrayStream *stream = PyCapsule_GetPointer(capsule, "arrow_array_stream");
    const char *problem = NULL;
    if (stream != NULL
        && (stream->release == NULL || width <= 0 || rows < 0 || row_start < 0
            || row_start > rows || cols.len % (Py_ssize_t)sizeof(int64_t) != 0))
        problem = "a released stream, or a width, rows or columns out of range";
    Py_ssize_t n = cols.len / (Py_ssize_t)sizeof(int64_t);
    if (stream != NULL && problem == NULL && out.len != n * rows * width)
        problem = "out is not a (len(columns), rows) array of width-byte values";
    if (stream == NULL || problem != NULL) {
        PyBuffer_Release(&cols);
        PyBuffer_Release(&out);
        if (problem != NULL)
            PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    const int64_t *columns = (const int64_t *)cols.buf;
    uint8_t *dst = (uint8_t *)out.buf;
    int64_t done = row_start, failed = 0;
    int error = 0;
    const char *message = NULL;
    Py_BEGIN_ALLOW_THREADS
    struct ArrowSchema schema;
    error = stream->get_schema(stream, &schema);
    if (error == 0) {
        failed = !schema_fits(&schema, format, columns, n);
        schema.release(&schema);
    }
    while (error == 0 && !failed) {
        struct ArrowArray array;
        error = stream->get_next(stream, &array);
        if (error != 0 || array.release == NULL)
            break;  /* an error, or the end of the stream */
        failed = !copy_batch(&array, columns, n, (size_t)width, dst, rows, done);
        if (!failed)
            done += array.length;
        array.release(&array);
    }
    if (error != 0)
        message = stream->get_last_error(stream);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&cols);
    PyBuffer_Release(&out);
    if (error != 0) {
        PyErr_Format(PyExc_RuntimeError, "Arrow stream error %d: %s", error,
                     message != NULL ? message : "(no message)");
        return NULL;
    }
    return PyLong_FromLongLong(failed ? -1 : done - row_start);
}

static PyMethodDef methods[] = {
    {"crc32", crc32_py, METH_VARARGS, "crc32(data) -> int: zlib.crc32(data)."},
    {"block_crcs", block_crcs, METH_VARARGS,
     "block_crcs(data, block_size) -> bytes: the little-endian CRC32 of each block."},
    {"verify_ranges", verify_ranges, METH_VARARGS,
     "verify_ranges(payload, block_size, crcs, begins, ends, done) -> int: -1, or the "
     "first block whose CRC32 does not match."},
    {"verify_packed", verify_packed, METH_VARARGS,
     "verify_packed(payload, block_size, crcs, offset, w, rows, done) -> int: verify_ranges "
     "for the bytes of bit-packed values ``rows``."},
    {"take_binary", take_binary, METH_VARARGS,
     "take_binary(parts, offset_size) -> (offsets, data) | None: DICTIONARY pages' values "
     "materialised as one binary column."},
    {"unpack_bits", unpack_bits, METH_VARARGS,
     "unpack_bits(buf, offset, w, out, itemsize) -> bool: every bit-packed value, as "
     "integers of itemsize bytes."},
    {"pack_bits", pack_bits, METH_VARARGS,
     "pack_bits(values, w, out) -> bool: uint64 values bit-packed at w bits into out."},
    {"gather_bits", gather_bits, METH_VARARGS,
     "gather_bits(buf, offset, w, indices, out) -> bool: bit-packed values at indices."},
    {"segment_sums", segment_sums, METH_VARARGS,
     "segment_sums(buf, offset, end, w, interval, rows, before, value) -> bool: each row's "
     "bit-packed value and the sum of the values since its segment's start."},
    {"byte_planes", byte_planes, METH_VARARGS,
     "byte_planes(src, dst, width, join) -> None: BYTE_SPLIT planes of the values in src "
     "(join false), or the values of the planes (join true), written to dst."},
    {"frames_fit", frames_fit, METH_VARARGS,
     "frames_fit(frames, starts, ends, sizes, first) -> int: -1, or the first zstd frame "
     "the header checks do not pass."},
    {"schema_find", schema_find, METH_VARARGS,
     "schema_find(area, hashes, names, hash_offset, capacity, columns_offset, num_columns)\n"
     "-> list | None: the column of each name (-1: none), or None (look up in Python)."},
    {"schema_entries", schema_entries, METH_VARARGS,
     "schema_entries(area, columns, columns_offset, heap_end, num_nodes, node_ids_offset)\n"
     "-> list | None: each column entry checked (name, code, flags, streams, blob offset,\n"
     "blob size, node ids), or None where a check fails (read them in Python)."},
    {"cmb_scan", cmb_scan, METH_VARARGS,
     "cmb_scan(raw, specs, num_stripes, num_rows, column, data_start, data_end) -> list | None:\n"
     "a Column Metadata Block's checks; per stream (descriptor type, position, chunks of\n"
     "other than one page), or None where a check fails (parse it in Python)."},
    {"gather_stream", gather_stream, METH_VARARGS,
     "gather_stream(stream, format, width, columns, out, rows, row_start) -> int: the\n"
     "columns of an exported record batch stream copied into rows of out (writer batch\n"
     "mode); the rows gathered, or -1 where a batch could not be copied so."},
    {"decimal_trials", decimal_trials, METH_VARARGS,
     "decimal_trials(values, width, kernel, pow10, pow10_inv, lo, hi, out) -> None: per "
     "exponent, the FLOAT_DECIMAL misfits, misses and k range of the values."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kernels",
    "Point-read kernels (docs/FORMAT.md): CRC_BLOCKS checksums, CRC-32 as zlib computes it,\n"
    "and the header checks of ZSTD_BLOCKS frames.\n"
    "\n"
    "Example:\n"
    "    >>> import zlib, numpy as np\n"
    "    >>> from fermion.format import kernels\n"
    "    >>> data = bytes(range(256)) * 5\n"
    "    >>> kernels.crc32(data) == zlib.crc32(data)\n"
    "    True\n"
    "    >>> crcs = kernels.block_crcs(data, 512)\n"
    "    >>> int(np.frombuffer(crcs, '<u4')[2]) == zlib.crc32(data[1024:])\n"
    "    True\n"
    "    >>> done = np.zeros(3, dtype=np.uint8)\n"
    "    >>> kernels.verify_ranges(data, 512, crcs, np.array([10]), np.array([600]), done)\n"
    "    -1\n"
    "    >>> done.tolist()\n"
    "    [1, 1, 0]\n",
    -1, methods,
};

PyMODINIT_FUNC PyInit_kernels(void)
{
    build_tables();
#ifdef HAVE_CLMUL_PATH
    __builtin_cpu_init();
    use_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse2");
#endif
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "CLMUL", use_clmul) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
