#!/usr/bin/python3
"""Checks that the deployment files agree with the server they deploy.

Parses the Dockerfile, the compose files (validated by `docker-compose config`), the Prometheus and
Grafana provisioning, and the Kubernetes manifests, and checks what must match onnxserve itself: ports,
the probe command and health service names, metric paths and names, the shutdown grace, the ghz command.
Usage: manifests_test.py --root REPO [--onnxserve BUILD/cli/onnxserve]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

import yaml

ARGS = None
# Triton's ports: REST and health, gRPC, Prometheus metrics.
HTTP_PORT = 8000
GRPC_PORT = 8001
METRICS_PORT = 8002


def path(*parts):
    return os.path.join(ARGS.root, *parts)


def load_yaml(*parts):
    with open(path(*parts)) as f:
        return list(yaml.safe_load_all(f))


def flag_value(args, name):
    """Value of --name=V or --name V in an argument list, or None."""
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


class DockerfileTest(unittest.TestCase):
    def setUp(self):
        with open(path("Dockerfile")) as f:
            self.text = f.read()

    def test_both_stages_start_from_bookworm_slim(self):
        self.assertEqual(re.findall(r"^FROM (\S+)", self.text, re.M), ["debian:bookworm-slim"] * 2)

    def test_build_stage_uses_the_project_dependency_script_and_runs_unit_tests(self):
        self.assertIn("scripts/install-deps.sh", self.text)
        self.assertRegex(self.text, r"ctest .*-L unit")

    def test_runtime_stage_is_non_root_exposes_ports_and_probes_health(self):
        runtime = self.text.split("\nFROM ")[-1]
        user = re.search(r"^USER (\S+)", runtime, re.M)
        self.assertIsNotNone(user)
        self.assertNotIn(user.group(1), ("root", "0"))
        self.assertIn(f"EXPOSE {HTTP_PORT} {GRPC_PORT} {METRICS_PORT}", runtime)
        self.assertRegex(runtime, r'HEALTHCHECK[\s\S]*"onnxserve", "probe"')
        self.assertIn('ENTRYPOINT ["onnxserve", "serve", "--model-repository", "/models"]', runtime)
        self.assertNotRegex(runtime, r"-dev\b|build-essential|g\+\+|cmake")


class ComposeTest(unittest.TestCase):
    FILES = ["docker-compose.yml", "docker-compose.scale.yml"]

    def test_compose_files_validate(self):
        tool = shutil.which("docker-compose") or shutil.which("podman-compose")
        if tool is None:
            self.skipTest("neither docker-compose nor podman-compose is installed (scripts/install-deps.sh installs it)")
        for name in self.FILES:
            result = subprocess.run([tool, "-f", path("deploy", name), "--profile", "load", "config", "-q"],
                                    capture_output=True, text=True)
            self.assertEqual(result.returncode, 0, f"{name}: {result.stderr}")

    def onnxserve_services(self, compose):
        return {k: v for k, v in compose["services"].items() if k.startswith("onnxserve")}

    def test_onnxserve_services_agree_with_the_server(self):
        for name in self.FILES:
            compose = load_yaml("deploy", name)[0]
            services = self.onnxserve_services(compose)
            self.assertTrue(services, name)
            for svc_name, svc in services.items():
                where = f"{name}:{svc_name}"
                cmd = svc["command"]
                self.assertEqual(flag_value(cmd, "--grpc-port"), str(GRPC_PORT), where)
                self.assertEqual(flag_value(cmd, "--http-port"), str(HTTP_PORT), where)
                self.assertEqual(flag_value(cmd, "--metrics-port"), str(METRICS_PORT), where)
                test = svc["healthcheck"]["test"]
                self.assertEqual(test[1:4], ["onnxserve", "probe", "--addr"], where)
                self.assertTrue(test[4].endswith(f":{GRPC_PORT}"), where)
                self.assertIn(svc["volumes"][0].split(":")[1], ("/models",), where)
                grace = int(flag_value(cmd, "--shutdown-grace-secs"))
                self.assertGreater(int(svc["stop_grace_period"].rstrip("s")), grace, where)
                self.assertIn("restart", svc, where)
                self.assertIn("limits", svc["deploy"]["resources"], where)

    def test_prometheus_scrapes_every_onnxserve_service(self):
        for compose_file, prom_file in [("docker-compose.yml", "prometheus.yml"),
                                        ("docker-compose.scale.yml", "prometheus-scale.yml")]:
            services = self.onnxserve_services(load_yaml("deploy", compose_file)[0])
            prom = load_yaml("deploy", "prometheus", prom_file)[0]
            job = prom["scrape_configs"][0]
            self.assertEqual(job["metrics_path"], "/metrics")
            targets = set(job["static_configs"][0]["targets"])
            self.assertEqual(targets, {f"{s}:{METRICS_PORT}" for s in services}, prom_file)

    def test_ghz_runs_model_infer_as_documented(self):
        compose = load_yaml("deploy", "docker-compose.yml")[0]
        ghz = compose["services"]["ghz"]
        self.assertEqual(ghz["profiles"], ["load"])
        cmd = ghz["command"]
        self.assertEqual(flag_value(cmd, "--call"), "inference.GRPCInferenceService/ModelInfer")
        self.assertEqual(cmd[-1], f"onnxserve:{GRPC_PORT}")
        data_file = flag_value(cmd, "--data-file")
        self.assertTrue(os.path.exists(path("deploy", "ghz", os.path.basename(data_file))), data_file)
        with open(path("docs", "deployment.md")) as f:
            doc = f.read()
        self.assertIn(" ".join(["ghz"] + cmd[:-1]), doc, "docs/deployment.md must show the compose ghz command")

    def test_ghz_request_files_are_model_infer_requests(self):
        for name in os.listdir(path("deploy", "ghz")):
            if not name.endswith("_request.json"):
                continue
            with open(path("deploy", "ghz", name)) as f:
                req = json.load(f)
            self.assertEqual(req["model_name"], "digits", name)
            self.assertEqual(len(req["inputs"]), len(req["raw_input_contents"]), name)


class GrafanaTest(unittest.TestCase):
    def test_datasource_points_at_prometheus(self):
        ds = load_yaml("deploy", "grafana", "provisioning", "datasources", "prometheus.yml")[0]
        self.assertEqual(ds["datasources"][0]["url"], "http://prometheus:9090")

    def test_dashboard_queries_only_metrics_the_server_exports(self):
        with open(path("deploy", "grafana", "dashboards", "onnxserve.json")) as f:
            dash = json.load(f)
        with open(path("server", "observability", "metrics.cc")) as f:
            source = f.read()
        exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
        names = set()
        for e in exprs:
            names.update(m for m in re.findall(r"\b((?:onnxserve|process)_[a-z_]+)", e))
        self.assertTrue(names)
        for name in names:
            base = re.sub(r"_(bucket|sum|count)$", "", name)
            self.assertIn(f'"{base}"', source, f"dashboard uses {name}, which server/observability/metrics.cc does not define")


class KubernetesTest(unittest.TestCase):
    def setUp(self):
        self.docs = {}
        for name in os.listdir(path("deploy", "k8s")):
            if name.endswith(".yaml") and name != "kustomization.yaml":
                for doc in load_yaml("deploy", "k8s", name):
                    self.docs[doc["kind"]] = doc

    def container(self):
        return self.docs["Deployment"]["spec"]["template"]["spec"]["containers"][0]

    def test_kustomization_lists_every_manifest(self):
        kust = load_yaml("deploy", "k8s", "kustomization.yaml")[0]
        files = sorted(n for n in os.listdir(path("deploy", "k8s")) if n.endswith(".yaml") and n != "kustomization.yaml")
        self.assertEqual(sorted(kust["resources"]), files)

    def test_probes_use_grpc_health_on_the_grpc_port(self):
        c = self.container()
        for probe in ("livenessProbe", "readinessProbe"):
            self.assertEqual(c[probe]["grpc"], {"port": GRPC_PORT, "service": ""}, probe)
        self.assertEqual(c["startupProbe"]["httpGet"], {"path": "/v2/health/live", "port": HTTP_PORT})

    def test_ports_and_args_agree(self):
        c = self.container()
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        self.assertEqual(ports, {"http": HTTP_PORT, "grpc": GRPC_PORT, "metrics": METRICS_PORT})
        self.assertEqual(flag_value(c["args"], "--grpc-port"), str(GRPC_PORT))
        self.assertEqual(flag_value(c["args"], "--http-port"), str(HTTP_PORT))
        self.assertEqual(flag_value(c["args"], "--metrics-port"), str(METRICS_PORT))
        svc_ports = {p["name"]: p["targetPort"] for p in self.docs["Service"]["spec"]["ports"]}
        self.assertEqual(svc_ports, {"http": "http", "grpc": "grpc", "metrics": "metrics"})

    def test_termination_grace_exceeds_server_shutdown_grace(self):
        pod = self.docs["Deployment"]["spec"]["template"]["spec"]
        grace = int(flag_value(self.container()["args"], "--shutdown-grace-secs"))
        self.assertGreater(pod["terminationGracePeriodSeconds"], grace)

    def test_resources_models_volume_and_scrape_annotations(self):
        c = self.container()
        self.assertIn("requests", c["resources"])
        self.assertIn("limits", c["resources"])
        self.assertIn("/models", [m["mountPath"] for m in c["volumeMounts"]])
        ann = self.docs["Deployment"]["spec"]["template"]["metadata"]["annotations"]
        self.assertEqual((ann["prometheus.io/port"], ann["prometheus.io/path"]), (str(METRICS_PORT), "/metrics"))
        self.assertEqual(self.docs["ServiceMonitor"]["spec"]["endpoints"][0]["port"], "metrics")

    def test_selectors_match_the_pod_labels(self):
        labels = self.docs["Deployment"]["spec"]["template"]["metadata"]["labels"]
        for kind in ("Service", "PodDisruptionBudget"):
            sel = self.docs[kind]["spec"]["selector"]
            sel = sel.get("matchLabels", sel)
            self.assertTrue(sel.items() <= labels.items(), kind)
        target = self.docs["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"]
        self.assertEqual((target["kind"], target["name"]), ("Deployment", self.docs["Deployment"]["metadata"]["name"]))


class ServerFlagsTest(unittest.TestCase):
    def test_every_flag_the_deployments_pass_is_known_to_the_server(self):
        if not ARGS.onnxserve:
            self.skipTest("no --onnxserve binary given")
        result = subprocess.run([ARGS.onnxserve, "serve", "--help"], capture_output=True, text=True)
        help_text = result.stdout + result.stderr
        if 'unknown command "serve"' in help_text:
            self.skipTest("onnxserve was built without the server (ONNXSERVE_BUILD_SERVER=OFF)")
        flags = set()
        for name in ("docker-compose.yml", "docker-compose.scale.yml"):
            for svc in ComposeTest().onnxserve_services(load_yaml("deploy", name)[0]).values():
                flags.update(a.split("=")[0] for a in svc["command"] if a.startswith("--"))
        k8s = [d for d in load_yaml("deploy", "k8s", "deployment.yaml")][0]
        flags.update(a.split("=")[0] for a in k8s["spec"]["template"]["spec"]["containers"][0]["args"])
        for flag in sorted(flags):
            underscored = flag[2:].replace("-", "_")
            self.assertTrue(flag[2:] in help_text or underscored in help_text, f"serve --help does not list {flag}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("--onnxserve")
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
