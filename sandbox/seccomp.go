package sandbox

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// A seccomp filter for Python and bash scripts, handed to bubblewrap (--seccomp FD, a compiled
// classic BPF program: struct sock_filter[], bwrap(1)). The namespaces and rlimits confine what a
// script reaches; this narrows the kernel surface it can use to get out of them. It refuses (EPERM)
// the calls Docker's default profile refuses to an unprivileged container
// (github.com/moby/moby profiles/seccomp/default.json) that a script has no use for: tracing, the
// key ring, BPF, perf, userfaultfd, io_uring, mounts and new namespaces (unshare, setns, clone with
// a namespace flag), modules, kexec, handles, swap, reboot, clocks, process memory of others. clone3
// answers ENOSYS, as Docker's does, so that the C library falls back to clone, whose flags a filter
// can read (clone3's are behind a pointer). Another architecture's calls kill the process
// (seccomp(2): check seccomp_data.arch first), and on x86-64 so do x32 ones (numbers with bit 30).

// seccompDenied are the refused system calls (golang.org/x/sys/unix numbers for this architecture).
var seccompDenied = []uint32{
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD, unix.SYS_FANOTIFY_INIT,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE,
	unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
	unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
	unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT,
	unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT, unix.SYS_SYSLOG, unix.SYS_ACCT, unix.SYS_QUOTACTL,
	unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX,
	unix.SYS_VHANGUP, unix.SYS_LOOKUP_DCOOKIE,
}

// cloneNamespaces are clone's flags that make a namespace.
const cloneNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// seccompArch is the audit architecture seccomp_data.arch holds for this build, or 0 where no
// filter is built (the script then runs with namespaces and rlimits only; docs/security.md).
func seccompArch() uint32 {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64
	}
	return 0
}

// seccompProgram is the compiled filter, in the byte layout of struct sock_filter (little-endian:
// amd64 and arm64), or nil where this architecture has none.
func seccompProgram() ([]byte, error) {
	arch := seccompArch()
	if arch == 0 {
		return nil, nil
	}
	// seccomp_data (linux/seccomp.h): int nr at 0, __u32 arch at 4, __u64 instruction_pointer at
	// 8, __u64 args[6] at 16 (the low half of args[0] at 16 on a little-endian machine).
	const offNr, offArch, offArg0 = 0, 4, 16
	// Layout: the checks, then the verdicts they jump to.
	n := len(seccompDenied)
	checks := 4 + 3 + n // arch (3), nr load (1), x32 + clone3 + clone (3), the denied (n)
	allow := checks
	cloneCheck := allow + 1 // load args[0], test, allow
	deny := cloneCheck + 3
	enosys := deny + 1
	skip := func(from, to int) uint8 { return uint8(to - from - 1) }
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	prog = append(prog,
		bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: 0x40000000, SkipTrue: skip(len(prog), deny)},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE3, SkipTrue: skip(len(prog)+1, enosys)},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE, SkipTrue: skip(len(prog)+2, cloneCheck)},
	)
	for _, nr := range seccompDenied {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipTrue: skip(len(prog), deny)})
	}
	prog = append(prog,
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
		bpf.LoadAbsolute{Off: offArg0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: cloneNamespaces, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
	)
	if len(prog) != enosys+1 || deny-checks > 255 {
		return nil, fmt.Errorf("seccomp program layout: %d instructions, want %d", len(prog), enosys+1)
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, in := range raw {
		_ = binary.Write(&b, binary.LittleEndian, struct {
			Code   uint16
			Jt, Jf uint8
			K      uint32
		}{in.Op, in.Jt, in.Jf, in.K})
	}
	return b.Bytes(), nil
}
