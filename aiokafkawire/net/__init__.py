"""aiokafkawire.net."""
