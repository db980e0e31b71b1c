"""The deployment files in deploy/ parse and say what production needs: the one UDP media port
exposed, readiness on /readyz, SIGTERM to drain, `chorus serve` as the command. No container
runtime is available here, so these check the files, not a running deployment."""

from __future__ import annotations

import configparser
from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def test_systemd_unit():
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str
    unit.read(DEPLOY / "chorus.service")
    service = unit["Service"]
    assert service["ExecStart"].endswith("chorus serve")
    assert service["KillSignal"] == "SIGTERM"
    # Environment= repeats (configparser keeps the last), so read those lines from the text.
    assert "Environment=CHORUS_MEDIA_PORT=10000" in (DEPLOY / "chorus.service").read_text()
    assert unit["Install"]["WantedBy"] == "multi-user.target"


def test_dockerfile_is_multi_stage_debian_12_with_swift():
    lines = [line.strip() for line in (DEPLOY / "Dockerfile").read_text().splitlines()]
    stages = [line for line in lines if line.startswith("FROM ")]
    assert len(stages) == 2, stages
    assert all("bookworm" in stage for stage in stages), stages
    assert stages[0].startswith("FROM swift:") and stages[0].endswith("AS build")
    text = "\n".join(lines)
    assert "swift build -c release --product chorus" in text
    assert "Chorus_ControlAPI.resources" in text  # the OpenAPI document ships next to the binary
    assert "EXPOSE 8080/tcp 10000/udp" in text
    assert "STOPSIGNAL SIGTERM" in text
    assert 'CMD ["serve"]' in text


def test_compose_publishes_the_udp_media_port():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    service = compose["services"]["chorus"]
    assert "10000:10000/udp" in service["ports"] and "8080:8080/tcp" in service["ports"]
    assert service["build"]["dockerfile"] == "deploy/Dockerfile"
    assert service["stop_signal"] == "SIGTERM"
    assert "CHORUS_PUBLIC_IP" in service["environment"]


def test_kubernetes_manifest():
    documents = [d for d in yaml.safe_load_all((DEPLOY / "kubernetes.yaml").read_text()) if d]
    kinds = {d["kind"]: d for d in documents}
    assert set(kinds) == {"PersistentVolumeClaim", "Deployment", "Service"}
    deployment = kinds["Deployment"]
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"]["type"] == "Recreate"
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["serve"]
    media = [p for p in container["ports"] if p["name"] == "media"][0]
    assert media["protocol"] == "UDP" and media["containerPort"] == 10000 and media["hostPort"] == 10000
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    env = {e["name"]: e for e in container["env"]}
    assert env["CHORUS_PUBLIC_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.hostIP"
    assert int(env["CHORUS_DRAIN_SECONDS"]["value"]) < deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
