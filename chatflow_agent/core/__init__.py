"""Agents, the run loop, conversation messages and session storage."""
