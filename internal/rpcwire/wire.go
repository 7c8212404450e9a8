// Package rpcwire is the wire contract of a served store: the RPC names, the
// messages and their encoding, the error codes and the socket's name. The
// transport is drpc (storj.io/drpc: framing, streams, cancellation); every
// message is one CBOR map with small integer keys (github.com/fxamacker/cbor,
// decoded with limits). docs/service.md is the normative description.
//
// What the agentstate front end needs (the socket, the Exec RPC and its
// messages) is in package execwire, which links nothing but the standard
// library; this package re-exports it.
package rpcwire

import (
	"errors"

	"github.com/agentstate/agentstate/internal/rpcwire/execwire"
	"github.com/fxamacker/cbor/v2"
	"storj.io/drpc"
)

// SocketName is the Unix socket a server listens on, inside the store directory.
const SocketName = execwire.SocketName

// MaxMessage bounds one message either way (drpc's reader refuses more).
// Clients split block uploads so that a message stays under MaxBatch.
const (
	MaxMessage = execwire.MaxMessage
	MaxBatch   = 4 << 20
)

// The RPCs. Repository calls mirror dag/repo.Storage one for one; Exec runs a
// command line in the server (Unix socket only).
const (
	RPCStatus      = "/agentstate.v1/Status"
	RPCGet         = "/agentstate.v1/Get"
	RPCHas         = "/agentstate.v1/Has"
	RPCPut         = "/agentstate.v1/Put"
	RPCAllCIDs     = "/agentstate.v1/AllCIDs" // stream
	RPCPrefix      = "/agentstate.v1/CIDsWithPrefix"
	RPCHead        = "/agentstate.v1/HeadRecord"
	RPCSwapHead    = "/agentstate.v1/SwapHead"
	RPCHeads       = "/agentstate.v1/HeadRecords" // stream
	RPCLog         = "/agentstate.v1/LogRecords"  // stream
	RPCAppendLines = "/agentstate.v1/AppendLines"
	RPCTapeLines   = "/agentstate.v1/TapeLines" // stream
	RPCGetMeta     = "/agentstate.v1/GetMeta"
	RPCSetMeta     = "/agentstate.v1/SetMeta"
	RPCMetaPrefix  = "/agentstate.v1/MetaPrefix" // stream
	RPCDeleteMeta  = "/agentstate.v1/DeleteMetaPrefix"
	RPCWatch       = "/agentstate.v1/WatchHeads" // stream
	RPCGC          = "/agentstate.v1/GC"
	RPCForget      = "/agentstate.v1/Forget"
	RPCAdoptCuts   = "/agentstate.v1/AdoptCuts"
	RPCLearnKeys   = "/agentstate.v1/LearnKeys"
	RPCTrustKeys   = "/agentstate.v1/TrustKeys"
	RPCSetTag      = "/agentstate.v1/SetTag"
	RPCDeleteTag   = "/agentstate.v1/DeleteTag"
	RPCUndo        = "/agentstate.v1/Undo"
	RPCExec        = execwire.RPCExec // bidirectional stream
)

// Writes lists the RPCs a read-only token may not call.
var Writes = map[string]bool{
	RPCPut: true, RPCSwapHead: true, RPCGC: true, RPCForget: true, RPCAdoptCuts: true, RPCAppendLines: true, RPCSetMeta: true, RPCDeleteMeta: true, RPCExec: true,
	RPCLearnKeys: true, RPCTrustKeys: true, RPCSetTag: true, RPCDeleteTag: true, RPCUndo: true,
}

// OperatorOnly lists the RPCs only the store's operator may call: over the
// Unix socket, never with a token (trusting a key decides whose histories
// the store accepts).
var OperatorOnly = map[string]bool{RPCTrustKeys: true}

// Error codes carried with an RPC's error (drpcerr). A client maps them back
// to the sentinel errors of the packages the calls mirror.
const (
	CodeNotFound     = 100                 // objects.ErrNotFound
	CodeSwapped      = 101                 // refs.ErrSwapped
	CodeUnauthorized = 102                 // missing or wrong token
	CodeReadOnly     = 103                 // a write with a read-only token
	CodeBadRequest   = 104                 // malformed request
	CodeDiskFull     = 105                 // the server's disk is full
	CodeNoExec       = execwire.CodeNoExec // this server does not run command lines
	CodeUnknown      = 107                 // unknown RPC
	CodeBadLanding   = 108                 // repo.ErrBadLanding: a HEAD move onto a tree the reader refuses
	CodeTagExists    = 109                 // repo.ErrTagExists: the tag names another commit
	CodeCorrupt      = 110                 // objects.ErrHashMismatch: the server's copy of a block is corrupt
	CodeNothingUndo  = 111                 // refs.ErrNothingUndo
	CodeNothingRedo  = 112                 // refs.ErrNothingRedo
	CodeHorizon      = 113                 // repo.ErrHorizon: an undo would reach a state a forget cut
	CodeNoAgent      = 114                 // refs.ErrNoAgent
)

// Token is the metadata key of the bearer token (TCP listeners).
const Token = "authorization"

// Req is every request: the fields a call does not use stay empty.
type Req struct {
	Agent  string   `cbor:"1,keyasint,omitempty"`
	CID    []byte   `cbor:"2,keyasint,omitempty"`
	CIDs   [][]byte `cbor:"3,keyasint,omitempty"`
	Blocks []Block  `cbor:"4,keyasint,omitempty"`
	Old    []byte   `cbor:"5,keyasint,omitempty"`
	Seq    uint64   `cbor:"6,keyasint,omitempty"`
	Entry  []byte   `cbor:"7,keyasint,omitempty"`
	Head   []byte   `cbor:"8,keyasint,omitempty"`
	Lines  [][]byte `cbor:"9,keyasint,omitempty"`
	Name   string   `cbor:"10,keyasint,omitempty"`
	Value  []byte   `cbor:"11,keyasint,omitempty"`
	Prefix []byte   `cbor:"12,keyasint,omitempty"`
	DryRun bool     `cbor:"13,keyasint,omitempty"`
	Agents []string `cbor:"14,keyasint,omitempty"`
	Exact  bool     `cbor:"15,keyasint,omitempty"` // DeleteMetaPrefix: the one record named, not a prefix
	Force  bool     `cbor:"16,keyasint,omitempty"` // SetTag: move an existing tag
	Redo   bool     `cbor:"17,keyasint,omitempty"` // Undo: re-apply the newest undone operation instead
}

// Block is a CID and its bytes.
type Block struct {
	CID  []byte `cbor:"1,keyasint"`
	Data []byte `cbor:"2,keyasint"`
}

// Resp is every answer, and every message of a stream.
type Resp struct {
	Data []byte   `cbor:"1,keyasint,omitempty"`
	OK   bool     `cbor:"2,keyasint,omitempty"`
	N    uint64   `cbor:"3,keyasint,omitempty"`
	CIDs [][]byte `cbor:"4,keyasint,omitempty"`
	// Records: a record's agent, sequence number and bytes, or a meta name
	// (Agent) and value (Data).
	Agent string `cbor:"5,keyasint,omitempty"`
	Seq   uint64 `cbor:"6,keyasint,omitempty"`
	// Status.
	Status *Status `cbor:"7,keyasint,omitempty"`
	// GC: blocks kept and deleted, bytes freed.
	Kept    uint64 `cbor:"8,keyasint,omitempty"`
	Deleted uint64 `cbor:"9,keyasint,omitempty"`
	Freed   uint64 `cbor:"10,keyasint,omitempty"`
}

// Status says who holds a store.
type Status struct {
	PID     int      `cbor:"1,keyasint"`
	Holder  string   `cbor:"2,keyasint"` // "agentstate serve", "runtime", ...
	Since   int64    `cbor:"3,keyasint"` // Unix seconds
	Store   string   `cbor:"4,keyasint"`
	Listen  []string `cbor:"5,keyasint,omitempty"`
	Exec    bool     `cbor:"6,keyasint,omitempty"`
	Clients int      `cbor:"7,keyasint,omitempty"`
	Version string   `cbor:"8,keyasint,omitempty"`
	// Access is what the asking connection may do: "owner" (the Unix
	// socket), "write" or "read" (a TCP token's kind).
	Access string `cbor:"9,keyasint,omitempty"`
}

// The Exec messages live in execwire, which the front end links alone.
type (
	ExecStart = execwire.ExecStart
	ExecIn    = execwire.ExecIn
	ExecOut   = execwire.ExecOut
)

// SocketAddr is execwire.SocketAddr.
func SocketAddr(p string) (string, func(), error) { return execwire.SocketAddr(p) }

// Encoding is the drpc encoding of every message.
var Encoding drpc.Encoding = codec{}

type codec struct{}

var (
	encMode cbor.EncMode
	decMode cbor.DecMode
)

func init() {
	var err error
	if encMode, err = (cbor.EncOptions{Sort: cbor.SortCoreDeterministic}).EncMode(); err != nil {
		panic(err)
	}
	// Requests come from anyone who can reach a listener: refuse what a
	// well-formed message never holds before allocating for it.
	decMode, err = (cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		IndefLength:       cbor.IndefLengthForbidden,
		TagsMd:            cbor.TagsForbidden,
		MaxNestedLevels:   8,
		MaxArrayElements:  1 << 20,
		MaxMapPairs:       64,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
	}).DecMode()
	if err != nil {
		panic(err)
	}
}

func (codec) Marshal(m drpc.Message) ([]byte, error) { return encMode.Marshal(m) }

func (codec) Unmarshal(b []byte, m drpc.Message) error {
	if err := decMode.Unmarshal(b, m); err != nil {
		return ErrMalformed{Err: err}
	}
	return nil
}

// ErrMalformed is a message that does not decode.
type ErrMalformed = execwire.ErrMalformed

// IsMalformed reports whether err is a message that did not decode.
func IsMalformed(err error) bool {
	var m ErrMalformed
	return errors.As(err, &m)
}
