"""aiokafkawire.cluster."""
