"""The wheel (bindings/python/run-tests builds it; APPSTORESERVER_WHEEL names it) installed into a fresh venv with no
Swift toolchain on PATH and no LD_LIBRARY_PATH, then a smoke test of every area through the bundled library; ldd of
the bundled library shows only the C/C++ runtime."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO

# glibc only: libstdc++ and libgcc are linked into the library (docs/platforms.md).
ALLOWED_LIBS = {"linux-vdso.so.1", "libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "ld-linux-x86-64.so.2"}


def clean_env(home: Path) -> dict:
    """PATH without any folder that holds the Swift toolchain; nothing else inherited."""
    path = [p for p in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
            if p and "swift" not in p.lower() and not (Path(p) / "swift").exists()]
    return {"PATH": os.pathsep.join(path), "HOME": str(home), "LANG": "C.UTF-8"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("APPSTORESERVER_WHEEL")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("wheel")
    lib = os.environ.get("APPSTORESERVER_LIB") or str(REPO / "build" / "dist" / "libappstoreserver.so.0")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out),
                    str(REPO / "bindings" / "python")], check=True, env=dict(os.environ, APPSTORESERVER_LIB=lib))
    return next(out.glob("appstoreserver-*.whl"))


def test_wheel_installs_and_runs_without_the_toolchain(wheel: Path, tmp_path: Path, testpki: Path) -> None:
    assert re.fullmatch(r"appstoreserver-[0-9.]+-py3-none-manylinux_2_28_x86_64\.whl", wheel.name), wheel.name
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = clean_env(tmp_path)
    assert shutil.which("swift", path=env["PATH"]) is None
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-index", "--no-deps", str(wheel)], check=True, env=env)
    site = subprocess.run([str(py), "-c", "import appstoreserver, os; print(os.path.dirname(appstoreserver.__file__))"],
                          check=True, env=env, capture_output=True, text=True, cwd=str(tmp_path)).stdout.strip()
    so = Path(site) / "libappstoreserver.so.0"
    assert so.is_file() and str(so).startswith(str(venv))
    ldd = subprocess.run(["ldd", str(so)], check=True, capture_output=True, text=True, env=env).stdout
    libs = {line.split()[0].rsplit("/", 1)[-1] for line in ldd.splitlines() if line.strip()}
    assert libs <= ALLOWED_LIBS, f"unexpected dependencies: {libs - ALLOWED_LIBS}\n{ldd}"
    smoke = textwrap.dedent(f"""
        import os, sys, json
        import appstoreserver
        assert "APPSTORESERVER_LIB" not in os.environ
        assert appstoreserver.library_path().startswith(sys.prefix), appstoreserver.library_path()
        from appstoreserver.signed_data_verifier import SignedDataVerifier, VerificationException
        from appstoreserver.models.Environment import Environment
        from appstoreserver.jws_signature_creator import PromotionalOfferV2SignatureCreator
        from appstoreserver.api_client import AppStoreServerAPIClient
        from appstoreserver.receipt_utility import ReceiptUtility
        pki = {str(testpki)!r}
        v = SignedDataVerifier([open(pki + "/root.der", "rb").read()], False, Environment.SANDBOX, "com.example.testpki")
        t = v.verify_and_decode_signed_transaction(open(pki + "/jws/tx-valid.jws").read().strip())
        assert t.bundleId == "com.example.testpki", t
        try:
            v.verify_and_decode_signed_transaction(open(pki + "/jws/tx-bad-signature-bit-flip.jws").read().strip())
            raise SystemExit("a bad signature verified")
        except VerificationException as e:
            assert e.reason.name == "BAD_SIGNATURE"
        from cryptography_free_key import PEM
        jws = PromotionalOfferV2SignatureCreator(PEM, "KEY", "ISSUER", "com.example").create_signature("p", "o", None)
        assert jws.count(".") == 2
        c = AppStoreServerAPIClient(PEM, "KEY", "ISSUER", "com.example", Environment.SANDBOX)
        class R:
            status_code = 200
            headers = {{"content-type": "application/json"}}
            def json(self): return {{"signedTransactionInfo": "x"}}
        c._execute_request = lambda *a: R()
        assert c.get_transaction_info("1").signedTransactionInfo == "x"
        try:
            ReceiptUtility().extract_transaction_id_from_app_receipt("bm90IGEgcmVjZWlwdA==")
            raise SystemExit("a non-receipt was read")
        except ValueError:
            pass
        print("smoke: ok", appstoreserver.__version__)
    """)
    (tmp_path / "cryptography_free_key.py").write_text(f"PEM = {_p256_pem()!r}\n")
    r = subprocess.run([str(py), "-c", smoke], env=dict(env, PYTHONPATH=str(tmp_path)), capture_output=True, text=True,
                       cwd=str(tmp_path))
    assert r.returncode == 0 and "smoke: ok" in r.stdout, r.stdout + r.stderr


def _p256_pem() -> bytes:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def test_wheel_carries_the_licence_and_notices(wheel: Path) -> None:
    """LICENSE and THIRD_PARTY_NOTICES (what the bundled library contains) in *.dist-info/licenses/, byte for byte the
    repository's, and METADATA's License-Expression: MIT and License-File lines (packaging/notices.py check wheel)."""
    r = subprocess.run([sys.executable, str(REPO / "packaging" / "notices.py"), "check", "wheel", str(wheel)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_auditwheel_agrees_with_the_tag(wheel: Path) -> None:
    """auditwheel (PyPA's checker, a test-only dependency) reads the bundled library's symbol versions: the wheel must
    be consistent with manylinux_2_28, as its tag says."""
    auditwheel = shutil.which("auditwheel") or str(Path(sys.executable).parent / "auditwheel")
    if not Path(auditwheel).exists():
        pytest.fail("auditwheel is not installed in the test venv (bindings/python/run-tests installs it)")
    out = subprocess.run([auditwheel, "show", str(wheel)], capture_output=True, text=True)
    text = " ".join((out.stdout + out.stderr).split())
    assert out.returncode == 0, text
    found = re.search(r'is consistent with the following platform tag: "manylinux_2_(\d+)_x86_64"', text)
    assert found and int(found.group(1)) <= 28, text  # the library may need even less than the tag promises
