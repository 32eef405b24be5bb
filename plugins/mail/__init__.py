"""Mail notifications for ARs, as Grid Engine sends them for qrsub -m/-M."""
