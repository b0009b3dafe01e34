"""aiokafkawire.spark."""
