"""Protobuf schemas of vendor formats and their generated modules (`make proto` regenerates them)."""
