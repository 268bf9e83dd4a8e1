package offsetsnap

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offsets.snap")
	if err := WriteFile(path, sample()); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, sample()) {
		t.Errorf("read back %+v, wrote %+v", got, sample())
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("mode: %v %v", st, err)
	}

	b, _ := os.ReadFile(path)
	b[len(b)-1] ^= 1
	if err := os.WriteFile(path, b, 0o640); err != nil {
		t.Fatal(err)
	}
	var ce *CorruptError
	if _, err := ReadFile(path); !errors.As(err, &ce) {
		t.Errorf("a flipped bit: %v, want a *CorruptError", err)
	}
	if _, err := ReadFile(path + ".missing"); err == nil || !strings.HasPrefix(err.Error(), "open snapshot: ") {
		t.Errorf("a missing file: %v", err)
	}
}
