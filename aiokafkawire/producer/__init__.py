"""aiokafkawire.producer."""
