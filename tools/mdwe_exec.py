#!/usr/bin/env python3
##===----------------------------------------------------------------------===##
##
## This source file is part of the ipnd open source project
##
## Copyright (c) the ipnd authors
## Licensed under Apache License v2.0
##
## See LICENSE for license information
##
## SPDX-License-Identifier: Apache-2.0
##
##===----------------------------------------------------------------------===##

"""Runs a command with memory-deny-write-execute in force (Linux >= 6.3 prctl PR_SET_MDWE,
kept across execve): what systemd's MemoryDenyWriteExecute=yes promises, enforced by the
kernel. Exits 111 when the kernel cannot do it. Usage: mdwe_exec.py PROGRAM [ARGS...]"""
import ctypes
import mmap
import os
import sys

PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 65, 1
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) != 0:
    print(f"PR_SET_MDWE unavailable: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
    sys.exit(111)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
probe = libc.mmap(None, 4096, mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
if probe not in (None, ctypes.c_void_p(-1).value):
    print("PR_SET_MDWE accepted but a writable+executable mapping still succeeded", file=sys.stderr)
    sys.exit(111)
os.execv(sys.argv[1], sys.argv[1:])
