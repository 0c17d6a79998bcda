package main

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// elfHeader returns the 64-byte header of a 64-bit little-endian ELF executable for machine,
// without sections or program headers: enough for debug/elf to read its class and machine.
func elfHeader(machine elf.Machine) []byte {
	b := make([]byte, 64)
	copy(b, elf.ELFMAG)
	b[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	b[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	b[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	b[elf.EI_OSABI] = byte(elf.ELFOSABI_NONE)
	le := binary.LittleEndian
	le.PutUint16(b[16:], uint16(elf.ET_EXEC))
	le.PutUint16(b[18:], uint16(machine))
	le.PutUint32(b[20:], uint32(elf.EV_CURRENT))
	le.PutUint16(b[52:], 64) // e_ehsize
	le.PutUint16(b[54:], 56) // e_phentsize
	le.PutUint16(b[58:], 64) // e_shentsize
	return b
}

// TestCheckWorkerBinary: the binary staged as the workers' program must be a linux/amd64 ELF
// executable, since Dataflow's workers run it. A launch from a Mac (a Mach-O binary) or an arm64
// machine would otherwise stage a program no worker can start, and the job would retry its
// workers without end; the launch refuses it before anything is staged, saying how to build one.
func TestCheckWorkerBinary(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	amd64 := write("amd64", elfHeader(elf.EM_X86_64))
	arm64 := write("arm64", elfHeader(elf.EM_AARCH64))
	macho := write("macho", []byte{0xcf, 0xfa, 0xed, 0xfe, 0x07, 0x00, 0x00, 0x01, 0x03, 0x00, 0x00, 0x00})

	if err := checkWorkerBinary(amd64, true); err != nil {
		t.Errorf("a linux/amd64 ELF executable: %v", err)
	}
	for _, tc := range []struct {
		path  string
		given bool
		want  []string
	}{
		{arm64, true, []string{"--worker_binary=" + arm64, "arm64", "linux/amd64", "GOOS=linux GOARCH=amd64"}},
		{macho, true, []string{"--worker_binary=" + macho, "not a Linux (ELF) program", "GOOS=linux GOARCH=amd64"}},
		{macho, false, []string{"this binary", "not a Linux (ELF) program", "--worker_binary=", "GOOS=linux GOARCH=amd64"}},
		{filepath.Join(dir, "missing"), true, []string{"--worker_binary=" + filepath.Join(dir, "missing")}},
	} {
		err := checkWorkerBinary(tc.path, tc.given)
		if err == nil {
			t.Errorf("%s (given %v): no error", tc.path, tc.given)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s (given %v): the error does not say %q: %v", tc.path, tc.given, w, err)
			}
		}
	}
}
