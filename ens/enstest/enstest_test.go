package enstest

import (
	"context"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
)

func TestNamehashKnownAnswers(t *testing.T) {
	for name, want := range map[string]string{
		"":        "0x0000000000000000000000000000000000000000000000000000000000000000",
		"eth":     "0x93cdeb708b7545dc668eb9280176169d1c33cfd8ed6f04690a0bcc88a93fc4ae",
		"foo.eth": "0xde9b09fd7c5f901e23a3f19fecc54828e9c848539801e86591bd9801b019f84f",
	} {
		if got := hexutil.Encode(func(h [32]byte) []byte { return h[:] }(Namehash(name))); got != want {
			t.Errorf("Namehash(%q) = %s, want %s", name, got, want)
		}
	}
}

func TestSplitNameRefusesUnnormalised(t *testing.T) {
	for _, name := range []string{"", "Lumen.eth", "lumen..eth", "lumen.eth.", "lü.eth", "a b.eth"} {
		if _, err := splitName(name); err == nil {
			t.Errorf("splitName(%q) accepted", name)
		}
	}
	if l, err := splitName("a-b_c.x9.eth"); err != nil || len(l) != 3 {
		t.Fatalf("splitName = %v, %v", l, err)
	}
}

func TestMissingArtefactsSayHowToInstall(t *testing.T) {
	_, err := loadArtefact(t.TempDir(), RegistryPackage, RegistryVersion, RegistryFile)
	if !errors.Is(err, errMissing) || !strings.Contains(err.Error(), "scripts/ens-contracts.sh") || !strings.Contains(err.Error(), EnvContracts) {
		t.Fatalf("missing artefacts: %v", err)
	}
	// A wrong version is named as such.
	dir := t.TempDir()
	pkg := filepath.Join(dir, RegistryPackage)
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"version":"0.5.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = loadArtefact(dir, RegistryPackage, RegistryVersion, RegistryFile)
	if err == nil || errors.Is(err, errMissing) || !strings.Contains(err.Error(), "0.5.0") {
		t.Fatalf("wrong version: %v", err)
	}
}

// TestChainOverHTTP drives the chain the way a CLI would: over its HTTP URL,
// sending a transaction and waiting for the receipt without anyone calling
// Seal.
func TestChainOverHTTP(t *testing.T) {
	c := NewChain(t)
	if !strings.HasPrefix(c.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %s is not on the loopback interface", c.URL)
	}
	owner, stranger := c.NewAccount(t), c.NewAccount(t)
	c.Register(t, "lumen.eth", Address(owner))
	if got := c.ResolverOf(t, "lumen.eth"); got != c.Resolver {
		t.Fatalf("resolver of lumen.eth = %s, want %s", got, c.Resolver)
	}
	if got := c.Owner(t, "eth"); got != Address(c.Deployer) {
		t.Fatalf("owner of eth = %s, want the deployer", got)
	}
	if got := c.Text(t, "lumen.eth", "agent-snapshot"); got != "" {
		t.Fatalf("fresh record = %q", got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := ethclient.DialContext(ctx, c.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if id, err := cl.ChainID(ctx); err != nil || id.Int64() != ChainID {
		t.Fatalf("chain id over HTTP = %v, %v", id, err)
	}
	// Only the documented namespaces are served over HTTP.
	var peers any
	if err := cl.Client().CallContext(ctx, &peers, "admin_peers"); err == nil {
		t.Fatal("admin_peers answered over HTTP")
	}

	setText := func(value string) []byte {
		data, err := c.ResolverABI.Pack("setText", Namehash("lumen.eth"), "agent-snapshot", value)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	// The stranger is refused by the real resolver.
	if _, err := cl.EstimateGas(ctx, ethereum.CallMsg{From: Address(stranger), To: &c.Resolver, Data: setText("x")}); err == nil {
		t.Fatal("the resolver accepted setText from a stranger")
	}

	// The owner's transaction is sealed by the loop while we wait.
	nonce, err := cl.PendingNonceAt(ctx, Address(owner))
	if err != nil {
		t.Fatal(err)
	}
	head, err := cl.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tip := big.NewInt(1e9)
	tx, err := types.SignTx(types.NewTx(&types.DynamicFeeTx{
		ChainID: big.NewInt(ChainID), Nonce: nonce, GasTipCap: tip,
		GasFeeCap: new(big.Int).Add(tip, new(big.Int).Mul(head.BaseFee, big.NewInt(2))),
		Gas:       200_000, To: &c.Resolver, Data: setText("hello"),
	}), types.LatestSignerForChainID(big.NewInt(ChainID)), owner)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.SendTransaction(ctx, tx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var mined *big.Int
	for {
		r, err := cl.TransactionReceipt(ctx, tx.Hash())
		if err == nil {
			if r.Status != types.ReceiptStatusSuccessful {
				t.Fatal("owner's setText reverted")
			}
			mined = r.BlockNumber
			break
		}
		if !errors.Is(err, ethereum.NotFound) {
			t.Fatal(err)
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("transaction not sealed within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("sealed after %v", time.Since(start))
	// The node hands out a receipt once its block is stored, and makes the
	// block the head a moment later; reads are at the head.
	for {
		h, err := cl.HeaderByNumber(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if h.Number.Cmp(mined) >= 0 {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the head stayed at block %s, before the transaction's %s", h.Number, mined)
		}
		time.Sleep(time.Millisecond)
	}
	if got := c.Text(t, "lumen.eth", "agent-snapshot"); got != "hello" {
		t.Fatalf("record = %q, want hello", got)
	}
	// SetText through the helper, and a second registration of a sibling
	// reuses the existing parent.
	c.SetText(t, owner, "lumen.eth", "agent-snapshot", "again")
	if got := c.Text(t, "lumen.eth", "agent-snapshot"); got != "again" {
		t.Fatalf("record = %q, want again", got)
	}
	c.Register(t, "other.eth", Address(stranger))
	if got := c.Owner(t, "other.eth"); got != Address(stranger) {
		t.Fatalf("owner of other.eth = %s", got)
	}
}

func TestWriteKeyFile(t *testing.T) {
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "keys", "eth.key")
	WriteKeyFile(t, p, k)
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode: %v %v", fi, err)
	}
	raw, _ := os.ReadFile(p)
	back, err := crypto.HexToECDSA(strings.TrimSpace(string(raw)))
	if err != nil || Address(back) != Address(k) {
		t.Fatalf("key file does not hold the key: %v", err)
	}
}
