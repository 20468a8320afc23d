/* The scanner's block-at-a-time loops over a str's code units (SSE2 where the compiler has it, else 8 bytes at a
   time): declared in _scan_c.pyx (cdef extern from "_simd.h"). Needs Python.h and Cython's CYTHON_INLINE, which
   the generated module includes and defines before this header. */
#ifndef TEXTCALLS_SIMD_H
#define TEXTCALLS_SIMD_H

/* _stop_run: the first index from i of the quote (an ASCII character: '"' in JSON), a backslash or a
   control character in a str's 1- or 2-byte code units, as far as whole blocks reach (16 bytes with
   SSE2, 8 without); or where the next block would pass n. No such character lies between i and the
   answer: the caller's loop goes on from there. 4-byte text: i. */
#if defined(__SSE2__) && (defined(__GNUC__) || defined(__clang__)) && !defined(TEXTCALLS_NO_SSE2)
#include <emmintrin.h>
#define STOP_RUN_BYTES 16
static CYTHON_INLINE Py_ssize_t _stop_run(int kind, const void* d, Py_ssize_t i, Py_ssize_t n,
                                          unsigned int quote) {
    const char* p = (const char*)d;
    int mask;
    if (kind == 1) {
        const __m128i q = _mm_set1_epi8((char)quote), b = _mm_set1_epi8(0x5C), c = _mm_set1_epi8(0x1F);
        const __m128i z = _mm_setzero_si128();
        for (; i + 16 <= n; i += 16) {
            __m128i x = _mm_loadu_si128((const __m128i*)(p + i));
            /* x - 0x1F saturates to 0 exactly for x <= 0x1F */
            mask = _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, q), _mm_cmpeq_epi8(x, b)),
                                                  _mm_cmpeq_epi8(_mm_subs_epu8(x, c), z)));
            if (mask)
                return i + __builtin_ctz((unsigned)mask);
        }
    } else if (kind == 2) {
        const __m128i q = _mm_set1_epi16((short)quote), b = _mm_set1_epi16(0x5C), c = _mm_set1_epi16(0x1F);
        const __m128i z = _mm_setzero_si128();
        for (; i + 8 <= n; i += 8) {
            __m128i x = _mm_loadu_si128((const __m128i*)(p + 2 * i));
            mask = _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(_mm_cmpeq_epi16(x, q), _mm_cmpeq_epi16(x, b)),
                                                  _mm_cmpeq_epi16(_mm_subs_epu16(x, c), z)));
            if (mask)  /* two bits a code unit */
                return i + (__builtin_ctz((unsigned)mask) >> 1);
        }
    }
    return i;
}
/* n + 2 and what escaping adds (1 a character, 5 when escapes[c] is 'u'), counted 16 bytes at a
   time with no branch a block: the stops are counted in byte (2-byte: word) lanes, summed every 255
   (4096) blocks; a block with a control character also looks for those written as u00XX. -1 for 4-byte
   text (the caller counts). */
static CYTHON_INLINE Py_ssize_t _lanes8(__m128i acc) {
    __m128i s = _mm_sad_epu8(acc, _mm_setzero_si128());
    return _mm_cvtsi128_si32(s) + _mm_cvtsi128_si32(_mm_unpackhi_epi64(s, s));
}
static CYTHON_INLINE Py_ssize_t _lanes16(__m128i acc) {
    __m128i s = _mm_madd_epi16(acc, _mm_set1_epi16(1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}
static Py_ssize_t _escaped_size(int kind, const void* d, Py_ssize_t n, const unsigned char* escapes) {
    const char* p = (const char*)d;
    Py_ssize_t i = 0, size = n + 2;
    unsigned int ctrl, k, c, blocks = 0;
    const __m128i z = _mm_setzero_si128();
    __m128i acc = z;
    if (kind == 1) {
        const __m128i q = _mm_set1_epi8(0x22), b = _mm_set1_epi8(0x5C), lo = _mm_set1_epi8(0x1F);
        for (; i + 16 <= n; i += 16) {
            __m128i x = _mm_loadu_si128((const __m128i*)(p + i));
            __m128i cm = _mm_cmpeq_epi8(_mm_subs_epu8(x, lo), z);
            acc = _mm_sub_epi8(acc, _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, q), _mm_cmpeq_epi8(x, b)), cm));
            if (++blocks == 255) {
                size += _lanes8(acc);
                acc = z;
                blocks = 0;
            }
            for (ctrl = (unsigned)_mm_movemask_epi8(cm); ctrl; ctrl &= ctrl - 1) {
                k = (unsigned)__builtin_ctz(ctrl);
                if (escapes[(unsigned char)p[i + k]] == 'u')
                    size += 4;
            }
        }
        size += _lanes8(acc);
        for (; i < n; i++) {
            c = (unsigned char)p[i];
            if (c < 128 && escapes[c])
                size += escapes[c] == 'u' ? 5 : 1;
        }
    } else if (kind == 2) {
        const Py_UCS2* p2 = (const Py_UCS2*)d;
        const __m128i q = _mm_set1_epi16(0x22), b = _mm_set1_epi16(0x5C), lo = _mm_set1_epi16(0x1F);
        for (; i + 8 <= n; i += 8) {
            __m128i x = _mm_loadu_si128((const __m128i*)(p2 + i));
            __m128i cm = _mm_cmpeq_epi16(_mm_subs_epu16(x, lo), z);
            acc = _mm_sub_epi16(acc, _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi16(x, q), _mm_cmpeq_epi16(x, b)), cm));
            if (++blocks == 4096) {
                size += _lanes16(acc);
                acc = z;
                blocks = 0;
            }
            for (ctrl = (unsigned)_mm_movemask_epi8(cm); ctrl; ctrl &= ctrl - 1) {
                k = (unsigned)__builtin_ctz(ctrl);  /* the code unit's low bit; its high bit goes next */
                ctrl &= ctrl - 1;
                if (escapes[p2[i + (k >> 1)]] == 'u')
                    size += 4;
            }
        }
        size += _lanes16(acc);
        for (; i < n; i++) {
            c = p2[i];
            if (c < 128 && escapes[c])
                size += escapes[c] == 'u' ? 5 : 1;
        }
    } else {
        return -1;
    }
    return size;
}
/* Writes d[i:end) (1- or 2-byte text) as JSON string text into o, of the same kind, from *k: each 16-byte
   block is stored whole, then the position moves past its plain run, and the stop that ends it is
   written from a table, 8 characters stored at once, with no branch on which escape it is: a quote,
   backslash or control character c as out[8c..] (its first out_len[c] characters); with pairs (a simple Python
   literal's body, checked by _literal_k), a backslash and the ASCII character e after it as
   out[8(128 + e)..]. A store that goes past what is written is overwritten by what follows, so it must
   stay inside the output: blocks are written while room for a block and an escape stored whole is left
   before room (24 code units; 2-byte text, 16). Returns where it stopped in d; *k moves. */
static Py_ssize_t _json_blocks(int kind, const void* d, Py_ssize_t i, Py_ssize_t end, void* o,
                               Py_ssize_t* k, Py_ssize_t room, int pairs, const unsigned char* out,
                               const unsigned char* out_len) {
    Py_ssize_t j = *k;
    unsigned int mask, c, at;
    const __m128i z = _mm_setzero_si128();
    if (kind == 1) {
        const unsigned char* p = (const unsigned char*)d;
        unsigned char* w = (unsigned char*)o;
        const __m128i q = _mm_set1_epi8(0x22), b = _mm_set1_epi8(0x5C), lo = _mm_set1_epi8(0x1F);
        while (i + 17 <= end && j + 24 <= room) {  /* (p[i + 16]: a pair's second character) */
            __m128i x = _mm_loadu_si128((const __m128i*)(p + i));
            _mm_storeu_si128((__m128i*)(w + j), x);
            mask = (unsigned)_mm_movemask_epi8(
                _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, q), _mm_cmpeq_epi8(x, b)),
                             _mm_cmpeq_epi8(_mm_subs_epu8(x, lo), z)));
            if (!mask) {
                i += 16;
                j += 16;
                continue;
            }
            c = (unsigned)__builtin_ctz(mask);
            i += c;
            j += c;
            at = p[i++];
            if (at == 0x5C && pairs)  /* (a branch: i goes on without waiting for the load) */
                at = 128 + (p[i++] & 127u);
            memcpy(w + j, out + 8 * at, 8);
            j += out_len[at];
        }
    } else if (kind == 2) {
        const Py_UCS2* p = (const Py_UCS2*)d;
        Py_UCS2* w = (Py_UCS2*)o;
        const __m128i q = _mm_set1_epi16(0x22), b = _mm_set1_epi16(0x5C), lo = _mm_set1_epi16(0x1F);
        while (i + 9 <= end && j + 16 <= room) {
            __m128i x = _mm_loadu_si128((const __m128i*)(p + i));
            _mm_storeu_si128((__m128i*)(w + j), x);
            mask = (unsigned)_mm_movemask_epi8(
                _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi16(x, q), _mm_cmpeq_epi16(x, b)),
                             _mm_cmpeq_epi16(_mm_subs_epu16(x, lo), z)));
            if (!mask) {
                i += 8;
                j += 8;
                continue;
            }
            c = (unsigned)__builtin_ctz(mask) >> 1;  /* two bits a code unit */
            i += c;
            j += c;
            at = p[i++];
            if (at == 0x5C && pairs)
                at = 128 + (p[i++] & 127u);
            _mm_storeu_si128((__m128i*)(w + j),
                             _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i*)(out + 8 * at)), z));
            j += out_len[at];
        }
    }
    *k = j;
    return i;
}
/* The stops of one block of _literal_blocks at p[i], B code units, W mask bits a unit (ONE: one unit's
   bits): each taken in turn, the lowest first; a backslash's character is taken with it, and when it is
   the block's last unit's, the next block starts after it. */
#define _LITERAL_STOPS(B, W, ONE)                                                    \
    next = i + B;                                                                    \
    while (mask) {                                                                   \
        c = (unsigned)__builtin_ctz(mask) / W;                                       \
        ch = p[i + c];                                                               \
        if (ch == 0x5C) {                                                            \
            if (i + c + 1 >= n || (e = p[i + c + 1]) >= 128 || escape[e] == 2) {     \
                i += c;                                                              \
                goto out;                                                            \
            }                                                                        \
            add += pair_extra[e];                                                    \
            if (c == B - 1) {                                                        \
                next = i + B + 1;                                                    \
                break;                                                               \
            }                                                                        \
            mask &= ~(((ONE << W) | ONE) << (W * c));                                \
        } else if (ch == quote || ch == 0 || ch == 0x0A || ch == 0x0D) {             \
            i += c;                                                                  \
            goto out;                                                                \
        } else {                                                                     \
            add += char_extra[ch];                                                   \
            mask &= ~(ONE << (W * c));                                               \
        }                                                                            \
    }                                                                                \
    i = next;
/* Reads a simple Python literal's body (_literal_k) from i, 16 bytes at a time (1- and 2-byte text),
   taking every stop of a block from its mask: the quote, a backslash with the character after it, a
   control character, and a '"' (one only a '-quoted literal holds). *extra grows by what each stop it
   takes adds written as JSON: pair_extra[e] for a backslash and e, char_extra[c] for c. It stops, for
   the caller to decide, at the quote, a NUL, LF or CR, a backslash before a non-ASCII character or one
   escape[] marks 2 (or at the body's last character), or where the next block would pass n. */
static Py_ssize_t _literal_blocks(int kind, const void* d, Py_ssize_t i, Py_ssize_t n, unsigned int quote,
                                  Py_ssize_t* extra, const unsigned char* escape,
                                  const signed char* pair_extra, const signed char* char_extra) {
    Py_ssize_t add = 0, next;
    unsigned int mask, c, ch, e;
    const __m128i z = _mm_setzero_si128();
    if (kind == 1) {
        const unsigned char* p = (const unsigned char*)d;
        const __m128i q = _mm_set1_epi8((char)quote), dq = _mm_set1_epi8(0x22), b = _mm_set1_epi8(0x5C);
        const __m128i lo = _mm_set1_epi8(0x1F);
        while (i + 16 <= n) {
            __m128i x = _mm_loadu_si128((const __m128i*)(p + i));
            mask = (unsigned)_mm_movemask_epi8(
                _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, q), _mm_cmpeq_epi8(x, dq)),
                             _mm_or_si128(_mm_cmpeq_epi8(x, b), _mm_cmpeq_epi8(_mm_subs_epu8(x, lo), z))));
            _LITERAL_STOPS(16, 1, 1u)
        }
    } else if (kind == 2) {
        const Py_UCS2* p = (const Py_UCS2*)d;
        const __m128i q = _mm_set1_epi16((short)quote), dq = _mm_set1_epi16(0x22), b = _mm_set1_epi16(0x5C);
        const __m128i lo = _mm_set1_epi16(0x1F);
        while (i + 8 <= n) {
            __m128i x = _mm_loadu_si128((const __m128i*)(p + i));
            mask = (unsigned)_mm_movemask_epi8(
                _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi16(x, q), _mm_cmpeq_epi16(x, dq)),
                             _mm_or_si128(_mm_cmpeq_epi16(x, b), _mm_cmpeq_epi16(_mm_subs_epu16(x, lo), z))));
            _LITERAL_STOPS(8, 2, 3u)  /* two bits a code unit */
        }
    }
out:
    *extra += add;
    return i;
}
/* The first index from i of a code unit among 8 characters, as far as whole 16-byte blocks reach before
   end; 1- and 2-byte text. vecs: 8 blocks of 16 bytes, each one character in the text's kind (a block
   loaded is cheaper than one made from a character at each call). */
static CYTHON_INLINE Py_ssize_t _past_chars(int kind, const void* d, Py_ssize_t i, Py_ssize_t end,
                                            const unsigned char* vecs) {
    const char* p = (const char*)d;
    const __m128i* v = (const __m128i*)vecs;
    __m128i x, m;
    unsigned int mask;
    int j;
    if (kind == 1) {
        for (; i + 16 <= end; i += 16) {
            x = _mm_loadu_si128((const __m128i*)(p + i));
            m = _mm_cmpeq_epi8(x, _mm_loadu_si128(v));
            for (j = 1; j < 8; j++)
                m = _mm_or_si128(m, _mm_cmpeq_epi8(x, _mm_loadu_si128(v + j)));
            mask = (unsigned)_mm_movemask_epi8(m);
            if (mask)
                return i + __builtin_ctz(mask);
        }
    } else if (kind == 2) {
        for (; i + 8 <= end; i += 8) {
            x = _mm_loadu_si128((const __m128i*)(p + 2 * i));
            m = _mm_cmpeq_epi16(x, _mm_loadu_si128(v));
            for (j = 1; j < 8; j++)
                m = _mm_or_si128(m, _mm_cmpeq_epi16(x, _mm_loadu_si128(v + j)));
            mask = (unsigned)_mm_movemask_epi8(m);
            if (mask)
                return i + (__builtin_ctz(mask) >> 1);
        }
    }
    return i;
}
#else
/* SWAR: a byte below 0x20 sets the top bit of (x - 0x20..) & ~x, a zero byte of x ^ c that of
   (y - 0x01..) & ~y; a borrow sets top bits only above such a byte, so "some byte" is exact in any
   byte order. The block that has one is left to the caller. */
#define STOP_RUN_BYTES 8
static CYTHON_INLINE Py_ssize_t _stop_run(int kind, const void* d, Py_ssize_t i, Py_ssize_t n,
                                          unsigned int quote) {
    uint64_t x, q, b, ones, tops;
    Py_ssize_t per;
    if (kind == 1) {
        ones = 0x0101010101010101ULL; tops = 0x8080808080808080ULL; per = 8;
    } else if (kind == 2) {
        ones = 0x0001000100010001ULL; tops = 0x8000800080008000ULL; per = 4;
    } else {
        return i;
    }
    for (; i + per <= n; i += per) {
        memcpy(&x, (const char*)d + i * kind, 8);
        q = x ^ (quote * ones);
        b = x ^ (0x5C * ones);
        if ((((x - 0x20 * ones) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b)) & tops)
            break;
    }
    return i;
}
static Py_ssize_t _escaped_size(int kind, const void* d, Py_ssize_t n, const unsigned char* escapes) {
    return -1;  /* the caller counts */
}
static Py_ssize_t _json_blocks(int kind, const void* d, Py_ssize_t i, Py_ssize_t end, void* o,
                               Py_ssize_t* k, Py_ssize_t room, int pairs, const unsigned char* out,
                               const unsigned char* out_len) {
    return i;  /* the caller writes it all */
}
static Py_ssize_t _literal_blocks(int kind, const void* d, Py_ssize_t i, Py_ssize_t n, unsigned int quote,
                                  Py_ssize_t* extra, const unsigned char* escape,
                                  const signed char* pair_extra, const signed char* char_extra) {
    return i;  /* the caller reads it all */
}
static CYTHON_INLINE Py_ssize_t _past_chars(int kind, const void* d, Py_ssize_t i, Py_ssize_t end,
                                            const unsigned char* vecs) {
    return i;  /* the caller reads on */
}
#endif

#endif /* TEXTCALLS_SIMD_H */
