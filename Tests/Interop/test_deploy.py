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
    assert "EXPOSE 8080/tcp 10000/udp 10000/tcp" in text
    assert "STOPSIGNAL SIGTERM" in text
    assert 'CMD ["serve"]' in text


def test_compose_publishes_the_udp_media_port():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    service = compose["services"]["chorus"]
    assert "10000:10000/udp" in service["ports"] and "8080:8080/tcp" in service["ports"]
    assert "10000:10000/tcp" in service["ports"]  # ICE-TCP
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
    media_tcp = [p for p in container["ports"] if p["name"] == "media-tcp"][0]
    assert media_tcp["protocol"] == "TCP" and media_tcp["containerPort"] == 10000 and media_tcp["hostPort"] == 10000
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    env = {e["name"]: e for e in container["env"]}
    assert env["CHORUS_PUBLIC_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.hostIP"
    assert int(env["CHORUS_DRAIN_SECONDS"]["value"]) < deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]


def coturn_settings() -> dict[str, list[str]]:
    """deploy/coturn/turnserver.conf as option -> values (flags have the value "")."""
    settings: dict[str, list[str]] = {}
    for line in (DEPLOY / "coturn" / "turnserver.conf").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            settings.setdefault(key.strip(), []).append(value.strip())
    return settings


def test_coturn_config_for_chorus():
    """The shape of the TURN configuration; Tests/Interop/test_turn.py runs it and allocates."""
    settings = coturn_settings()
    assert settings["listening-port"] == ["3478"] and settings["tls-listening-port"] == ["443"]
    assert "use-auth-secret" in settings and "lt-cred-mech" not in settings
    # coturn accepts credentials made with every static-auth-secret it is given: a value here
    # would stay valid next to the one compose passes.
    assert "static-auth-secret" not in settings
    assert int(settings["min-port"][0]) < int(settings["max-port"][0])
    assert "allow-loopback-peers" not in settings and "no-multicast-peers" in settings
    denied = settings["denied-peer-ip"]
    for private in ("10.0.0.0-10.255.255.255", "172.16.0.0-172.31.255.255", "192.168.0.0-192.168.255.255",
                    "127.0.0.0-127.255.255.255", "169.254.0.0-169.254.255.255", "100.64.0.0-100.127.255.255",
                    "fc00::-fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fe80::-febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff"):
        assert private in denied, private
    assert settings["cert"] == ["/etc/coturn/certs/fullchain.pem"] and settings["pkey"] == ["/etc/coturn/certs/privkey.pem"]


def test_compose_runs_coturn_beside_chorus_on_request():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    chorus, coturn = compose["services"]["chorus"], compose["services"]["coturn"]
    assert coturn["profiles"] == ["turn"]  # `docker compose up` alone starts Chorus only
    assert coturn["network_mode"] == "host" and "ports" not in coturn
    assert "./coturn/turnserver.conf:/etc/coturn/turnserver.conf:ro" in coturn["volumes"]
    assert "./coturn/certs:/etc/coturn/certs:ro" in coturn["volumes"]
    assert (DEPLOY / "coturn" / "turnserver.conf").is_file()
    command = " ".join(coturn["entrypoint"] + coturn["command"])
    assert command.startswith("/bin/sh -c exec turnserver -c /etc/coturn/turnserver.conf")
    # The secret is required when the container starts ($$: a literal $ for the shell), and the
    # relay may reach the address Chorus announces.
    assert '--static-auth-secret="$${TURN_SECRET:?' in command
    assert '--allowed-peer-ip="$${CHORUS_PUBLIC_IP}"' in command
    assert coturn["environment"]["CHORUS_PUBLIC_IP"] == chorus["environment"]["CHORUS_PUBLIC_IP"]


def test_cluster_compose_runs_three_nodes_on_one_postgres():
    compose = yaml.safe_load((DEPLOY / "cluster-compose.yaml").read_text())
    services = compose["services"]
    nodes = {name: svc for name, svc in services.items() if name != "postgres"}
    assert len(nodes) == 3 and "healthcheck" in services["postgres"]
    urls, ids, media = set(), set(), set()
    for svc in nodes.values():
        env = svc["environment"]
        assert env["CHORUS_DB"].startswith("postgres://") and "@postgres:5432/" in env["CHORUS_DB"]
        assert svc["depends_on"]["postgres"]["condition"] == "service_healthy"
        ids.add(env["CHORUS_NODE_ID"])
        urls.add(env["CHORUS_ADVERTISE_URL"])
        port = env["CHORUS_MEDIA_PORT"]
        media.add(port)
        # Each node's own media port is published, UDP and TCP (media is never load balanced).
        assert f"{port}:{port}/udp" in svc["ports"] and f"{port}:{port}/tcp" in svc["ports"]
        assert env["CHORUS_ADVERTISE_URL"].endswith(":" + env["CHORUS_HTTP_PORT"])
    assert len(ids) == len(urls) == len(media) == 3


def test_kubernetes_cluster_manifest():
    documents = [d for d in yaml.safe_load_all((DEPLOY / "kubernetes-cluster.yaml").read_text()) if d]
    kinds = {d["kind"] for d in documents}
    assert {"StatefulSet", "Secret"} <= kinds
    workload = next(d for d in documents if d["kind"] == "StatefulSet")
    pod = workload["spec"]["template"]["spec"]
    container = pod["containers"][0]
    names = {e["name"]: e for e in container["env"]}
    # The node ID is the pod's name (stable across restarts), the database URL a secret.
    assert names["CHORUS_NODE_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert "secretKeyRef" in names["CHORUS_DB"]["valueFrom"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    drain = int(names["CHORUS_DRAIN_SECONDS"]["value"])
    assert pod["terminationGracePeriodSeconds"] > drain
    assert any(p.get("protocol") == "UDP" for p in container["ports"])
