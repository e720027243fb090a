#!/usr/bin/python3
"""TLS, mutual TLS and access control end to end: a real server on loopback, talked to by grpcio, curl and
onnxserve probe/load, with certificates made by openssl for this run only (a CA, a server certificate for
127.0.0.1 and localhost, a client certificate, and a client certificate from a CA the server does not trust).

Run: ONNXSERVE_BIN=build/cli/onnxserve /usr/bin/python3 tests/e2e/tls_test.py
Skips (exit 0, with a message) when openssl or curl is missing.
"""
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest
import urllib.error
import urllib.request

import grpc

from metrics_test import BIN, EXAMPLES, ROOT, ServerProcess, run

sys.path.insert(0, str(ROOT / "examples"))
from client import generate_stubs  # noqa: E402  (examples/ is not a package)

CERTS = None  # the certificate directory, made by setUpModule
STUBS = None  # (grpc_service_pb2, grpc_service_pb2_grpc)
GRPC_KEY = "triton-grpc-protocol-api-key"


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def make_ca(name):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
            "-subj", "/CN=%s" % name, "-keyout", str(CERTS / ("%s.key" % name)), "-out", str(CERTS / ("%s.pem" % name)))


def make_cert(name, ca, extensions):
    """name.pem and name.key, signed by ca.pem/ca.key, with the given X.509 v3 extensions."""
    key, csr, ext = (CERTS / ("%s.%s" % (name, suffix)) for suffix in ("key", "csr", "ext"))
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=%s" % name,
            "-keyout", str(key), "-out", str(csr))
    ext.write_text(extensions)
    openssl("x509", "-req", "-in", str(csr), "-CA", str(CERTS / ("%s.pem" % ca)), "-CAkey", str(CERTS / ("%s.key" % ca)),
            "-CAcreateserial", "-days", "1", "-extfile", str(ext), "-out", str(CERTS / ("%s.pem" % name)))


def cert(name):
    return str(CERTS / name)


def setUpModule():
    global CERTS, STUBS
    missing = [tool for tool in ("openssl", "curl") if shutil.which(tool) is None]
    if missing:
        raise unittest.SkipTest("SKIPPED: %s not installed (scripts/install-deps.sh installs them)" % " and ".join(missing))
    CERTS = pathlib.Path(tempfile.mkdtemp(prefix="onnxserve-tls-"))
    make_ca("ca")
    make_ca("rogue-ca")
    make_cert("server", "ca", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    make_cert("client", "ca", "extendedKeyUsage=clientAuth\n")
    make_cert("rogue", "rogue-ca", "extendedKeyUsage=clientAuth\n")
    STUBS = generate_stubs(str(CERTS))


def tearDownModule():
    if CERTS is not None:
        shutil.rmtree(CERTS, ignore_errors=True)


def grpc_tls_flags(mutual=False):
    flags = ["--grpc-server-cert", cert("server.pem"), "--grpc-server-key", cert("server.key")]
    return flags + (["--grpc-use-ssl-mutual", "--grpc-root-cert", cert("ca.pem")] if mutual else ["--grpc-use-ssl"])


def http_tls_flags(mutual=False):
    flags = ["--http-server-cert", cert("server.pem"), "--http-server-key", cert("server.key")]
    return flags + (["--http-use-ssl-mutual", "--http-root-cert", cert("ca.pem")] if mutual else ["--http-use-ssl"])


def channel(server, client_cert=None, tls=True):
    target = "127.0.0.1:%d" % server.grpc_port
    if not tls:
        return grpc.insecure_channel(target)
    pair = {}
    if client_cert:
        pair = {"private_key": pathlib.Path(cert(client_cert + ".key")).read_bytes(),
                "certificate_chain": pathlib.Path(cert(client_cert + ".pem")).read_bytes()}
    credentials = grpc.ssl_channel_credentials(pathlib.Path(cert("ca.pem")).read_bytes(), **pair)
    return grpc.secure_channel(target, credentials)


def server_live(ch, metadata=()):
    """ServerLive through `ch`: (grpc.StatusCode, details)."""
    pb2, pb2_grpc = STUBS
    try:
        pb2_grpc.GRPCInferenceServiceStub(ch).ServerLive(pb2.ServerLiveRequest(), metadata=metadata, timeout=10)
        return grpc.StatusCode.OK, ""
    except grpc.RpcError as error:
        return error.code(), error.details()


def curl(url, *args):
    """(HTTP status or 0 when no HTTP answer came, body) of GET url with curl."""
    result = subprocess.run(["curl", "-s", "--max-time", "10", "-o", "-", "-w", "\n%{http_code}", *args, url],
                            capture_output=True, text=True, timeout=30)
    body, _, code = result.stdout.rpartition("\n")
    return int(code or 0), body


def probe(server, *args):
    return run("probe", "--addr", "127.0.0.1:%d" % server.grpc_port, "--timeout-ms", "5000", *args, timeout=30)


class GrpcTlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(flags=grpc_tls_flags() + ["--http-port", "-1"])

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_grpcio_over_tls(self):
        self.assertEqual(server_live(channel(self.server)), (grpc.StatusCode.OK, ""))

    def test_plaintext_client_fails(self):
        code, _ = server_live(channel(self.server, tls=False))
        self.assertEqual(code, grpc.StatusCode.UNAVAILABLE)

    def test_probe_over_tls(self):
        result = probe(self.server, "--tls-ca-cert", cert("ca.pem"))
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("SERVING", result.stdout)
        self.assertEqual(probe(self.server).returncode, 1, "a plaintext probe must not reach a TLS port")

    def test_probe_distrusts_another_ca(self):
        self.assertEqual(probe(self.server, "--tls-ca-cert", cert("rogue-ca.pem")).returncode, 1)


class GrpcMutualTlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(flags=grpc_tls_flags(mutual=True) + ["--http-port", "-1"])

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_client_with_a_trusted_certificate_is_served(self):
        self.assertEqual(server_live(channel(self.server, "client"))[0], grpc.StatusCode.OK)

    def test_client_without_a_certificate_is_refused(self):
        self.assertEqual(server_live(channel(self.server))[0], grpc.StatusCode.UNAVAILABLE)

    def test_client_with_an_untrusted_certificate_is_refused(self):
        self.assertEqual(server_live(channel(self.server, "rogue"))[0], grpc.StatusCode.UNAVAILABLE)

    def test_probe_and_load_with_a_client_certificate(self):
        tls = ["--tls-ca-cert", cert("ca.pem"), "--tls-client-cert", cert("client.pem"),
               "--tls-client-key", cert("client.key")]
        result = probe(self.server, *tls)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(probe(self.server, "--tls-ca-cert", cert("ca.pem")).returncode, 1)
        result = run("load", "--target", "127.0.0.1:%d" % self.server.grpc_port, "--model", "digits", "-n", "10",
                     *tls, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(json.loads(result.stdout.splitlines()[-1])["ok"], 10)


class HttpTlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(flags=http_tls_flags())
        cls.url = "https://127.0.0.1:%d" % cls.server.http_port

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_curl_over_tls(self):
        self.assertEqual(curl(self.url + "/v2/health/ready", "--cacert", cert("ca.pem"))[0], 200)
        code, body = curl(self.url + "/metrics", "--cacert", cert("ca.pem"))
        self.assertEqual(code, 200)
        self.assertIn("# TYPE", body)

    def test_plaintext_to_the_tls_port_fails(self):
        self.assertEqual(curl("http://127.0.0.1:%d/v2/health/ready" % self.server.http_port)[0], 0)

    def test_curl_distrusts_another_ca(self):
        self.assertEqual(curl(self.url + "/v2/health/ready", "--cacert", cert("rogue-ca.pem"))[0], 0)


class HttpMutualTlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(flags=http_tls_flags(mutual=True))
        cls.url = "https://127.0.0.1:%d" % cls.server.http_port

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_client_with_a_trusted_certificate_is_served(self):
        code, _ = curl(self.url + "/v2/health/live", "--cacert", cert("ca.pem"), "--cert", cert("client.pem"),
                       "--key", cert("client.key"))
        self.assertEqual(code, 200)

    def test_client_without_a_certificate_gets_403_everywhere(self):
        for path in ("/v2/health/live", "/metrics", "/no/such/path"):
            code, body = curl(self.url + path, "--cacert", cert("ca.pem"))
            self.assertEqual(code, 403, path)
            self.assertIn("client certificate", json.loads(body)["error"])

    def test_client_with_an_untrusted_certificate_is_refused(self):
        code, _ = curl(self.url + "/v2/health/live", "--cacert", cert("ca.pem"), "--cert", cert("rogue.pem"),
                       "--key", cert("rogue.key"))
        self.assertIn(code, (0, 403))  # the handshake may fail, or the request is answered 403

    def test_rest_load_with_a_client_certificate(self):
        load = ["load", "--protocol", "http", "--binary-data", "--target", "127.0.0.1:%d" % self.server.http_port,
                "--model", "digits", "-n", "10", "--tls-ca-cert", cert("ca.pem")]
        result = run(*load, "--tls-client-cert", cert("client.pem"), "--tls-client-key", cert("client.key"),
                     timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(json.loads(result.stdout.splitlines()[-1])["codes"], {"HTTP_200": 10})
        result = run(*load, timeout=60)  # no client certificate: the metadata request is refused
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("HTTP 403", result.stderr)


class GrpcRestrictedTest(unittest.TestCase):
    """health and inference need api-key, model-repository needs admin; metadata and the rest stay open."""

    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(flags=["--grpc-restricted-protocol=health,inference:api-key=s3cret",
                                          "--grpc-restricted-protocol", "model-repository:admin=adm1n"])
        cls.channel = channel(cls.server, tls=False)
        cls.stub = STUBS[1].GRPCInferenceServiceStub(cls.channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.server.stop()

    def call(self, method, request, metadata=()):
        try:
            getattr(self.stub, method)(request, metadata=metadata, timeout=10)
            return grpc.StatusCode.OK, ""
        except grpc.RpcError as error:
            return error.code(), error.details()

    def test_health_needs_the_header_with_the_right_value(self):
        code, details = server_live(self.channel)
        self.assertEqual(code, grpc.StatusCode.PERMISSION_DENIED)
        self.assertIn('"%s"' % GRPC_KEY, details)
        self.assertNotIn("s3cret", details)
        self.assertEqual(server_live(self.channel, [(GRPC_KEY, "wrong")])[0], grpc.StatusCode.PERMISSION_DENIED)
        self.assertEqual(server_live(self.channel, [(GRPC_KEY, "s3cret")])[0], grpc.StatusCode.OK)

    def test_grpc_health_v1_is_in_the_health_group(self):
        result = probe(self.server)
        self.assertEqual(result.returncode, 1)
        self.assertIn("PERMISSION_DENIED", result.stdout)
        self.assertEqual(probe(self.server, "--metadata", "%s=s3cret" % GRPC_KEY).returncode, 0)

    def test_inference_needs_the_header(self):
        pb2 = STUBS[0]
        request = pb2.ModelInferRequest(model_name="no_such_model")
        self.assertEqual(self.call("ModelInfer", request)[0], grpc.StatusCode.PERMISSION_DENIED)
        # With the header the request reaches the handler, which does not know the model.
        self.assertEqual(self.call("ModelInfer", request, [(GRPC_KEY, "s3cret")])[0], grpc.StatusCode.NOT_FOUND)
        stream = self.stub.ModelStreamInfer(iter([request]), timeout=10)
        with self.assertRaises(grpc.RpcError) as refused:
            list(stream)
        self.assertEqual(refused.exception.code(), grpc.StatusCode.PERMISSION_DENIED)

    def test_a_refused_unload_does_nothing(self):
        pb2 = STUBS[0]
        unload = pb2.RepositoryModelUnloadRequest(model_name="digits")
        code, details = self.call("RepositoryModelUnload", unload, [(GRPC_KEY, "s3cret")])
        self.assertEqual(code, grpc.StatusCode.PERMISSION_DENIED)
        self.assertIn('"triton-grpc-protocol-admin"', details)
        ready = self.stub.ModelReady(pb2.ModelReadyRequest(name="digits"), metadata=[(GRPC_KEY, "s3cret")], timeout=10)
        self.assertTrue(ready.ready, "the refused unload ran")

    def test_unrestricted_groups_stay_open(self):
        pb2 = STUBS[0]
        self.assertEqual(self.call("ServerMetadata", pb2.ServerMetadataRequest())[0], grpc.StatusCode.OK)
        self.assertEqual(self.call("ModelConfig", pb2.ModelConfigRequest(name="digits"))[0], grpc.StatusCode.OK)
        self.assertEqual(self.call("ModelStatistics", pb2.ModelStatisticsRequest())[0], grpc.StatusCode.OK)


class HttpRestrictedTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(flags=["--http-restricted-api=health:x-api-key=s3cret",
                                          "--http-restricted-api=inference:x-infer-key=k2"])

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def get(self, path, headers=None):
        request = urllib.request.Request("http://127.0.0.1:%d%s" % (self.server.http_port, path), headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def test_health_needs_the_header_with_the_right_value(self):
        for path in ("/v2/health/ready", "/v2/models/digits/ready"):
            code, body = self.get(path)
            self.assertEqual(code, 403, path)
            self.assertIn('"x-api-key"', json.loads(body)["error"])
            self.assertEqual(self.get(path, {"X-Api-Key": "wrong"})[0], 403)
            self.assertEqual(self.get(path, {"X-Api-Key": "s3cret"})[0], 200)

    def test_metrics_stay_open_unless_statistics_is_restricted(self):
        self.assertEqual(self.get("/metrics")[0], 200)

    def test_rest_load_sends_metadata_as_headers(self):
        load = ["load", "--protocol", "http", "--target", "127.0.0.1:%d" % self.server.http_port, "--model", "digits",
                "-n", "5"]
        for extra, codes in (((), {"HTTP_403": 5}), (("--metadata", "x-infer-key=k2"), {"HTTP_200": 5})):
            result = run(*load, *extra)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(json.loads(result.stdout.splitlines()[-1])["codes"], codes, extra)


class ListenerFlagsTest(unittest.TestCase):
    def test_reflection_can_be_turned_off(self):
        with ServerProcess(flags=["--grpc-reflection=false", "--http-port", "-1"]) as server:
            ch = grpc.insecure_channel("127.0.0.1:%d" % server.grpc_port)
            reflect = ch.stream_stream("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                                       request_serializer=lambda m: m, response_deserializer=lambda m: m)
            with self.assertRaises(grpc.RpcError) as off:
                list(reflect(iter([b"\x3a\x00"]), timeout=10))  # list_services: ""
            self.assertEqual(off.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
            ch.close()

    def test_metrics_port_serves_metrics_only_and_takes_them_off_the_http_port(self):
        with ServerProcess(flags=["--metrics-port", "0", "--http-restricted-api=statistics:x-scrape=ok"]) as server:
            self.assertGreater(server.metrics_port, 0)
            metrics = "http://127.0.0.1:%d" % server.metrics_port
            self.assertEqual(curl(metrics + "/metrics", "-H", "x-scrape: ok")[0], 200)
            self.assertEqual(curl(metrics + "/metrics")[0], 403)
            self.assertEqual(curl(metrics + "/v2/health/live")[0], 404)
            self.assertEqual(server.get("/metrics")[0], 404)
            self.assertEqual(server.get("/v2/health/live")[0], 200)


class StartupErrorsTest(unittest.TestCase):
    def serve(self, *flags):
        """(exit status, stderr) of a serve that must exit on its own."""
        result = subprocess.run([BIN, "serve", "--model-repository", str(EXAMPLES), "--grpc-port", "0",
                                 "--http-port", "0", "--metrics-port", "-1", "--address", "127.0.0.1", *flags],
                                capture_output=True, text=True, timeout=60)
        return result.returncode, result.stderr

    def test_inconsistent_flags_exit_2_naming_them(self):
        code, log = self.serve("--grpc-use-ssl-mutual", "--grpc-server-cert", cert("server.pem"),
                               "--grpc-server-key", cert("server.key"))
        self.assertEqual(code, 2, log)
        self.assertIn("--grpc-use-ssl-mutual needs --grpc-root-cert", log)
        code, log = self.serve("--http-restricted-api=health:a=1", "--http-restricted-api=health:b=2")
        self.assertEqual(code, 2, log)
        self.assertIn("already restricted", log)

    def test_bad_files_exit_1_naming_the_flag_and_the_file(self):
        code, log = self.serve("--http-use-ssl", "--http-server-cert", cert("server.pem"),
                               "--http-server-key", cert("client.key"))
        self.assertEqual(code, 1, log)
        self.assertIn("--http-server-key %s does not go with --http-server-cert" % cert("client.key"), log)
        code, log = self.serve(*grpc_tls_flags()[:1], cert("missing.pem"), *grpc_tls_flags()[2:])
        self.assertEqual(code, 1, log)
        self.assertIn("--grpc-server-cert %s: cannot read" % cert("missing.pem"), log)
        code, log = self.serve("--grpc-use-ssl", "--grpc-server-cert", cert("server.key"), "--grpc-server-key",
                               cert("server.key"))
        self.assertEqual(code, 1, log)
        self.assertIn("--grpc-server-cert %s: not a PEM certificate" % cert("server.key"), log)


if __name__ == "__main__":
    unittest.main()
