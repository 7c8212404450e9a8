package enstest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// The npm packages carrying the contracts, and the artefact inside each.
const (
	RegistryPackage = "@ensdomains/ens"
	RegistryVersion = "0.6.2"
	RegistryFile    = "build/contracts/ENSRegistry.json"
	ResolverPackage = "@ensdomains/resolver"
	ResolverVersion = "0.3.1"
	ResolverFile    = "build/contracts/PublicResolver.json"
)

// EnvContracts names the environment variable that points at the
// node_modules directory holding the packages.
const EnvContracts = "AGENTSTATE_ENS_CONTRACTS"

// errMissing marks artefacts that are not installed (as opposed to broken).
var errMissing = errors.New("enstest: ENS contract artefacts missing")

// Artefact is a compiled contract: its ABI and its creation bytecode.
type Artefact struct {
	ABI      abi.ABI
	Bytecode []byte
}

// ContractsDir returns the node_modules directory holding the packages:
// $AGENTSTATE_ENS_CONTRACTS, else <repo>/.cache/ens-contracts/node_modules,
// <repo> being the nearest directory above the working directory with a
// go.mod.
func ContractsDir(t testing.TB) string {
	t.Helper()
	dir, err := contractsDir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func contractsDir() (string, error) {
	if d := os.Getenv(EnvContracts); d != "" {
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, ".cache", "ens-contracts", "node_modules"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("enstest: no go.mod above %s to find .cache/ens-contracts; set %s", wd, EnvContracts)
		}
	}
}

// LoadContracts reads the ENSRegistry and PublicResolver artefacts from
// ContractsDir. Missing artefacts fail the test with the command that
// installs them.
func LoadContracts(t testing.TB) (registry, resolver Artefact) {
	t.Helper()
	dir := ContractsDir(t)
	registry, err := loadArtefact(dir, RegistryPackage, RegistryVersion, RegistryFile)
	if err != nil {
		t.Fatal(err)
	}
	resolver, err = loadArtefact(dir, ResolverPackage, ResolverVersion, ResolverFile)
	if err != nil {
		t.Fatal(err)
	}
	return registry, resolver
}

// loadArtefact reads one Truffle artefact from dir/pkg/file, checking the
// package's version.
func loadArtefact(dir, pkg, version, file string) (Artefact, error) {
	missing := func(err error) error {
		return fmt.Errorf("%w (%v).\n"+
			"Run scripts/ens-contracts.sh (or make test) to install %s@%s and %s@%s with npm,\n"+
			"or point %s at a node_modules directory holding them",
			errMissing, err, RegistryPackage, RegistryVersion, ResolverPackage, ResolverVersion, EnvContracts)
	}
	var pj struct {
		Version string `json:"version"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, pkg, "package.json"))
	if err != nil {
		return Artefact{}, missing(err)
	}
	if err := json.Unmarshal(raw, &pj); err != nil {
		return Artefact{}, fmt.Errorf("enstest: %s/package.json: %w", pkg, err)
	}
	if pj.Version != version {
		return Artefact{}, fmt.Errorf("enstest: %s is version %s in %s, the tests need %s: run scripts/ens-contracts.sh", pkg, pj.Version, dir, version)
	}
	raw, err = os.ReadFile(filepath.Join(dir, pkg, file))
	if err != nil {
		return Artefact{}, missing(err)
	}
	// Truffle artefacts store the creation code as "bytecode"; older ones
	// called it "unlinkedBinary".
	var art struct {
		ABI            json.RawMessage `json:"abi"`
		Bytecode       string          `json:"bytecode"`
		UnlinkedBinary string          `json:"unlinkedBinary"`
	}
	if err := json.Unmarshal(raw, &art); err != nil {
		return Artefact{}, fmt.Errorf("enstest: %s/%s: %w", pkg, file, err)
	}
	code := art.Bytecode
	if code == "" {
		code = art.UnlinkedBinary
	}
	if strings.Contains(code, "__") {
		return Artefact{}, fmt.Errorf("enstest: %s/%s: bytecode has unlinked library placeholders", pkg, file)
	}
	bin, err := hexutil.Decode(code)
	if err != nil || len(bin) == 0 {
		return Artefact{}, fmt.Errorf("enstest: %s/%s: bad bytecode: %v", pkg, file, err)
	}
	a, err := abi.JSON(strings.NewReader(string(art.ABI)))
	if err != nil {
		return Artefact{}, fmt.Errorf("enstest: %s/%s: abi: %w", pkg, file, err)
	}
	return Artefact{ABI: a, Bytecode: bin}, nil
}
