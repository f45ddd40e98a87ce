"""Sweeps: one case over the cartesian product of axes, one ordinary run directory per point,
plus sweep.json (docs/sweeps.md). This package reads them and renders the sweep report."""
