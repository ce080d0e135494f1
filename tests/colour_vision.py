"""Colours as a colour-blind reader sees them, for the tests of the report's colour scales.

:func:`deuteranopia` applies Machado, Oliveira and Fernandes's (2009) simulation of full
deuteranopia (the most common colour-vision deficiency) to sRGB pixels; :func:`delta_e` is the
CIE 1976 distance between two colours in L*a*b*, where about 2.3 is just noticeable and 20 or
more is told apart at a glance.
"""

from __future__ import annotations

import numpy as np

#: Machado et al. (2009), Table 1, deuteranopia at severity 1.0, on linear RGB.
DEUTERANOPIA = np.array([[0.367322, 0.860646, -0.227968],
                         [0.280085, 0.672501, 0.047413],
                         [-0.011820, 0.042940, 0.968881]])
#: sRGB (linear) to CIE XYZ under D65, and D65's white point.
SRGB_TO_XYZ = np.array([[0.4124564, 0.3575761, 0.1804375],
                        [0.2126729, 0.7151522, 0.0721750],
                        [0.0193339, 0.1191920, 0.9503041]])
WHITE = np.array([0.95047, 1.0, 1.08883])


def hex_rgb(colour: str) -> np.ndarray:
    """``#6baed6`` -> array([107, 174, 214])."""
    return np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)], dtype=float)


def _linear(rgb: np.ndarray) -> np.ndarray:
    value = np.asarray(rgb, dtype=float) / 255.0
    return np.where(value <= 0.04045, value / 12.92, ((value + 0.055) / 1.055) ** 2.4)


def _encoded(linear: np.ndarray) -> np.ndarray:
    linear = np.clip(linear, 0.0, 1.0)
    return 255.0 * np.where(linear <= 0.0031308, linear * 12.92, 1.055 * linear ** (1 / 2.4) - 0.055)


def deuteranopia(rgb: np.ndarray) -> np.ndarray:
    """sRGB values (…, 3), 0-255, as a deuteranope sees them."""
    return _encoded(_linear(rgb) @ DEUTERANOPIA.T)


def lab(rgb: np.ndarray) -> np.ndarray:
    """sRGB values (…, 3), 0-255, in CIE L*a*b* (D65)."""
    xyz = (_linear(rgb) @ SRGB_TO_XYZ.T) / WHITE
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], axis=-1)


def delta_e(first: np.ndarray, second: np.ndarray) -> float:
    """The CIE 1976 colour difference of two sRGB colours (0-255)."""
    return float(np.linalg.norm(lab(first) - lab(second)))
