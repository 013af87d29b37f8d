#!/usr/bin/env python3
"""p256.py BASE -- a fresh P-256 key standing in for an App Store Connect key: BASE.p8 (PKCS#8 PEM) and BASE.pub.pem."""
import sys

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

key = ec.generate_private_key(ec.SECP256R1())
with open(sys.argv[1] + ".p8", "wb") as f:
    f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
with open(sys.argv[1] + ".pub.pem", "wb") as f:
    f.write(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
