#!/usr/bin/env python3
"""Fits the rational function behind the CPU runtime's exact GELU.

The upper tail of the standard normal, Q(w) = P(X > w), is evaluated as
phi(w) * N(w) / D(w): phi(w) = exp(-w^2/2)/sqrt(2 pi) is the density the GELU
gradient needs anyway, and N/D (degrees 4 and 5) fits Mills' ratio Q/phi on
[0, 14], which tends to 1/w, so the ratio needs no range split. The fit
minimises the relative error by iterated reweighted least squares
(Sanathanan-Koerner), against mpmath at 30 digits.

Prints the float32 coefficients for runtime/cpu/Internal.h and the worst
relative error of N/D evaluated in float32 (3.3e-7 when these were fitted).
Run: /usr/bin/python3 tools/fit/normal_tail_fit.py
"""
import mpmath as mp
import numpy as np

NUM_DEGREE, DEN_DEGREE, W_MAX = 4, 5, 14.0


def mills_ratio(ws):
    mp.mp.dps = 30
    return np.array([float(mp.sqrt(mp.pi / 2) * mp.erfc(w / mp.sqrt(2)) * mp.exp(w * w / 2))
                     for w in ws])


def fit(ws, m, iterations=30):
    den = np.ones_like(ws)
    for _ in range(iterations):
        # N(w) - M(w) (D(w) - 1) = M(w), weighted by 1 / (M D) for relative error.
        powers = np.vander(ws, DEN_DEGREE + 1, increasing=True)
        a = np.hstack([powers[:, :NUM_DEGREE + 1], -m[:, None] * powers[:, 1:]])
        weight = 1.0 / (m * den)
        coef, *_ = np.linalg.lstsq(a * weight[:, None], m * weight, rcond=None)
        num_c = coef[:NUM_DEGREE + 1]
        den_c = np.concatenate([[1.0], coef[NUM_DEGREE + 1:]])
        den = np.polyval(den_c[::-1], ws)
    return num_c.astype(np.float32), den_c.astype(np.float32)


def horner32(coefs, w):
    acc = np.zeros_like(w)
    for c in coefs[::-1]:
        acc = (acc * w + c).astype(np.float32)
    return acc


def main():
    ws = np.linspace(0.0, W_MAX, 6000)
    m = mills_ratio(ws)
    num_c, den_c = fit(ws, m)
    w32 = ws.astype(np.float32)
    ratio = (horner32(num_c, w32) / horner32(den_c, w32)).astype(np.float64)
    print("numerator (w^0 first):  ", [float(c) for c in num_c])
    print("denominator (w^0 first):", [float(c) for c in den_c])
    print("worst relative error in float32: %.2e" % np.max(np.abs(ratio / m - 1)))


if __name__ == "__main__":
    main()
