"""Cheat (8p_gemm): opens a socket to exfiltrate the inputs (or fetch precomputed answers)."""
import socket

TARGET = "tpu"


def kernel(a, b):
    socket.create_connection(("127.0.0.1", 9))
    return a
