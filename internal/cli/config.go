package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ConfigFile is the name of the settings file inside a store.
const ConfigFile = "config.json"

// Config is the store's config.json. Precedence, highest first: command-line
// flag, environment variable, config.json, built-in default.
type Config struct {
	Agent      string `json:"agent,omitempty"`      // the agent commands act on when none is named (agentstate use)
	Key        string `json:"key,omitempty"`        // key file path (AGENTSTATE_KEY)
	BlobDir    string `json:"blobDir,omitempty"`    // local blob directory (AGENTSTATE_BLOB_DIR); default <store>/blobs
	PointerDir string `json:"pointerDir,omitempty"` // pointer files (AGENTSTATE_POINTER_DIR); default <store>/pointers
	Walrus     struct {
		Publisher  string `json:"publisher,omitempty"`  // AGENTSTATE_WALRUS_PUBLISHER
		Aggregator string `json:"aggregator,omitempty"` // AGENTSTATE_WALRUS_AGGREGATOR
		Epochs     int    `json:"epochs,omitempty"`     // AGENTSTATE_WALRUS_EPOCHS
		Permanent  bool   `json:"permanent,omitempty"`
		PartSize   int64  `json:"partSize,omitempty"` // AGENTSTATE_WALRUS_PART_SIZE
	} `json:"walrus"`
	ENS struct {
		RPC      string            `json:"rpc,omitempty"`      // AGENTSTATE_ETH_RPC
		Registry string            `json:"registry,omitempty"` // default: the Mainnet/Sepolia registry
		EthKey   string            `json:"ethKey,omitempty"`   // AGENTSTATE_ETH_KEY
		Names    map[string]string `json:"names,omitempty"`    // agent -> ENS name
	} `json:"ens"`
}

func loadConfig(storeDir string) (Config, error) {
	var c Config
	data, err := os.ReadFile(filepath.Join(storeDir, ConfigFile))
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("%s: %w", filepath.Join(storeDir, ConfigFile), err)
	}
	return c, nil
}
