// Package execwire is the part of the served store's wire contract
// (internal/rpcwire, docs/service.md) that the agentstate front end needs to
// hand a command line to a server: the socket's name and path, the Exec RPC,
// its three messages and their codec. It imports only the standard library,
// so a served command links none of the CBOR library, reflection-heavy code
// included, and starts as light as it can. Package rpcwire re-exports all of
// it.
package execwire

// SocketName is the Unix socket a server listens on, inside the store directory.
const SocketName = "agentstate.sock"

// MaxMessage bounds one message either way (drpc's reader refuses more).
const MaxMessage = 16 << 20

// RPCExec runs a command line in the server (Unix socket only).
const RPCExec = "/agentstate.v1/Exec"

// CodeNoExec is the error code of a server that does not run command lines.
const CodeNoExec = 106

// ExecStart opens an Exec stream: the command line and the client's
// surroundings, which the server uses in place of its own.
type ExecStart struct {
	Args      []string `cbor:"1,keyasint"`
	Dir       string   `cbor:"2,keyasint"`
	Env       []string `cbor:"3,keyasint,omitempty"` // KEY=VALUE, only what the command reads
	StdoutTTY bool     `cbor:"4,keyasint,omitempty"`
	Width     int      `cbor:"5,keyasint,omitempty"`
}

// ExecIn is a client's message after ExecStart: stdin bytes the server asked
// for, or EOF.
type ExecIn struct {
	Data []byte `cbor:"1,keyasint,omitempty"`
	EOF  bool   `cbor:"2,keyasint,omitempty"`
}

// ExecOut is a server's message on an Exec stream: output on stream 1
// (stdout) or 2 (stderr), a request for up to Want bytes of stdin, the exit
// code (Done), or Pager: the shell command line of the pager the client
// runs, on its own terminal, for the rest of stream 1 (sent at most once,
// before any stream 1 output, and only to a client whose stdout is a
// terminal).
type ExecOut struct {
	Stream int    `cbor:"1,keyasint,omitempty"`
	Data   []byte `cbor:"2,keyasint,omitempty"`
	Want   int    `cbor:"3,keyasint,omitempty"`
	Done   bool   `cbor:"4,keyasint,omitempty"`
	Code   int    `cbor:"5,keyasint,omitempty"`
	Pager  string `cbor:"6,keyasint,omitempty"`
}

// ErrMalformed is a message that does not decode.
type ErrMalformed struct{ Err error }

func (e ErrMalformed) Error() string { return "malformed message: " + e.Err.Error() }
func (e ErrMalformed) Unwrap() error { return e.Err }
