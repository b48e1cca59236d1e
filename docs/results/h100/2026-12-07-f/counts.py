"""How many of the probe's cases (ftz-probe.cu) the before-rounding and the IEEE rules decide
otherwise than the unbounded-exponent rule, counted exactly in integers. A device that computes
the unbounded rule differs from the other two in exactly these counts (ftz-rules.txt)."""
T = 2**47  # 2^-126 in units of 2^-173 (families 0 and 2: (2^23+k)(2^24-j) 2^-173)


def count(lo, hi, a):
    """j in [0, 4096) with lo <= a(2^24 - j) < hi."""
    m_lo, m_hi = -(-lo // a), -(-hi // a)
    return max(0, min(m_hi, 2**24 + 1) - max(m_lo, 2**24 - 4095))


before = ieee = 0
for k in range(4096):
    a = 2**23 + k
    before += count(T - 2**22, T, a)  # in [midpoint, 2^-126): before flushes, unbounded keeps
    ieee += count(T - 2**23, T - 2**22, a)  # in [IEEE's tie, midpoint): IEEE keeps, unbounded flushes
print("families 0, 2 (mul, fma with c = 0): before", 2 * before, "IEEE", 2 * ieee)

U = 2**45  # family 3: 2^-124 (1+k 2^-23)(1-j 2^-24) - 3 2^-126, in units of 2^-171
before = ieee = 0
for k in range(4096):
    a = 2**23 + k
    before += count(4 * U - 2**20, 4 * U, a)
    ieee += count(4 * U - 2**21, 4 * U - 2**20, a)
print("family 3 (fma near 3 2^-126): before", 2 * before, "IEEE", 2 * ieee)


def parts(bits):
    return (bits & 0x7FFFFF) | 0x800000, ((bits >> 23) & 0xFF) - 150


before = ieee = 0
for k in range(64):  # family 1: (2^-125 - k ulps) (1/2 - j ulps)
    for j in range(64):
        (ma, ea), (mb, eb) = parts(0x01000000 - k), parts(0x3F000000 - j)
        n, t = ma * mb * 2**25, 2 ** (-126 - ea - eb + 25)
        unbounded = n < t - 2 ** (-126 - ea - eb)
        before += (n < t) != unbounded
        ieee += (n < t - 2 ** (-126 - ea - eb + 1)) != unbounded
print("family 1 (the ties): before", 2 * before, "IEEE", 2 * ieee)
