"""The run manifest: what produced a report or a result (versions, machine, git revision, seeds)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

PACKAGES = ("numpy", "scipy", "sympy", "torch", "transformers", "hypothesis", "pytest", "matplotlib",
            "jinja2", "gguf", "accelerate")


def package_versions(packages: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """Installed version of each package, or "not installed"."""
    versions = {}
    for name in packages:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def git_revision(root: Path | None = None) -> str:
    """``git describe`` of the working tree (``-dirty`` when it has uncommitted changes)."""
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"], cwd=root,
                             capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"
    return out.stdout.strip()


def machine() -> dict[str, str | int | None]:
    """Processor, cores and OS of this machine."""
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
    }


def run_manifest(root: Path | None = None, **extra) -> dict:
    """A manifest for a run: time, versions, machine, git revision, plus ``extra`` (seeds, options)."""
    return {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "git_revision": git_revision(root),
        "packages": package_versions(),
        "machine": machine(),
        **extra,
    }
