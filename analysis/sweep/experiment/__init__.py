"""An experiment directory (docs/experiments.md): `manifest` (experiment.json) and `report`
(its parts -> one report, the seed's numbers beside ours)."""
