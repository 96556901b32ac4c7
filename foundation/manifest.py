"""The run manifest: what produced a report or a result (versions, machine, git revision, seeds)."""

from __future__ import annotations

import hashlib
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
    """``git describe`` of the working tree; with uncommitted changes ``-dirty+`` and the first 12 hex digits of the
    sha256 of ``git diff HEAD`` (the tracked changes), so that two different sets of changes on one commit are two
    revisions (a measurement of one is not reused for the other)."""
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"], cwd=root,
                             capture_output=True, text=True, timeout=10, check=True)
        described = out.stdout.strip()
        if described.endswith("-dirty"):
            diff = subprocess.run(["git", "diff", "HEAD", "--binary"], cwd=root, capture_output=True, timeout=30,
                                  check=True).stdout
            described += "+" + hashlib.sha256(diff).hexdigest()[:12]
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"
    return described


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
