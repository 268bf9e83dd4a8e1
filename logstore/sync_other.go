//go:build !linux

package logstore

import "os"

func fdatasync(f *os.File) error { return f.Sync() }
