package ens

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"
)

// A fixed, well-known test key (the first Hardhat development account);
// never use it for anything real.
const (
	testKeyHex  = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
	testKeyAddr = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadKeyFile(t *testing.T) {
	for _, content := range []string{
		testKeyHex,
		"0x" + testKeyHex + "\n",
		"  0X" + strings.ToUpper(testKeyHex) + "\r\n",
	} {
		k, err := LoadKeyFile(writeFile(t, content))
		if err != nil {
			t.Fatalf("LoadKeyFile(%q): %v", content, err)
		}
		if got := crypto.PubkeyToAddress(k.PublicKey).Hex(); got != testKeyAddr {
			t.Fatalf("key address %s, want %s", got, testKeyAddr)
		}
	}
}

func TestLoadKeyFileErrors(t *testing.T) {
	secretish := "deadbeefcafe" // any fragment of the bad content must stay out of the error
	for name, content := range map[string]string{
		"empty":     "",
		"short":     secretish,
		"long":      testKeyHex + "00",
		"not hex":   strings.Repeat("g", 52) + secretish,
		"zero":      strings.Repeat("0", 64),
		"too large": "0x" + strings.Repeat("f", 64), // above the secp256k1 group order
		"two keys":  testKeyHex + "\n" + testKeyHex,
		"huge":      strings.Repeat("a", 10000),
		"json":      `{"address":"` + secretish + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := writeFile(t, content)
			_, err := LoadKeyFile(path)
			if !errors.Is(err, ErrBadKeyFile) {
				t.Fatalf("LoadKeyFile: %v, want ErrBadKeyFile", err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
			if strings.Contains(err.Error(), secretish) || strings.Contains(err.Error(), "ffffffff") {
				t.Errorf("error %q quotes the file's content", err)
			}
		})
	}
	if _, err := LoadKeyFile(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LoadKeyFile of a missing file: %v, want os.ErrNotExist", err)
	}
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{testKeyHex, "0x" + testKeyHex, "", "0x", strings.Repeat("0", 64), strings.Repeat("f", 64), "zz"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := ParseKey(b)
		if err != nil {
			if k != nil {
				t.Fatal("key and error both returned")
			}
			return
		}
		// Whatever parsed is a usable key that round-trips.
		if got := crypto.FromECDSA(k); len(got) != 32 {
			t.Fatalf("parsed key is %d bytes", len(got))
		}
	})
}
