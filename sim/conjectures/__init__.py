"""The conjectures: families, float64 screens, searches, validated certificates, witnesses."""
