package loadgen

import (
	"github.com/ethereum/go-ethereum/crypto"
)

// The emitter contract is assembled by hand so that the tests need no
// Solidity compiler. Any call to it, whatever the calldata and value,
// emits two logs:
//
//	LOG2  topics [PingTopic, caller]   data  callvalue (32 bytes) ‖ calldata
//	LOG1  topics [TickTopic]           data  block number (32 bytes)
//
// The data is not ABI-encoded; the topic names only make the hashes
// recognisable.
var (
	PingTopic = crypto.Keccak256Hash([]byte("Ping(address,uint256,bytes)"))
	TickTopic = crypto.Keccak256Hash([]byte("Tick(uint256)"))
)

// Opcodes used below.
const (
	opSTOP         = 0x00
	opADD          = 0x01
	opCALLER       = 0x33
	opCALLVALUE    = 0x34
	opCALLDATASIZE = 0x36
	opCALLDATACOPY = 0x37
	opCODECOPY     = 0x39
	opNUMBER       = 0x43
	opMSTORE       = 0x52
	opPUSH1        = 0x60
	opPUSH32       = 0x7f
	opDUP1         = 0x80
	opLOG1         = 0xa1
	opLOG2         = 0xa2
	opRETURN       = 0xf3
)

// runtimeCode is the deployed code. Stacks are written top first.
func runtimeCode() []byte {
	code := []byte{
		opCALLVALUE,   // [value]
		opPUSH1, 0x00, // [0, value]
		opMSTORE,       // mem[0:32] = value
		opCALLDATASIZE, // [n]
		opPUSH1, 0x00,  // [0, n]            calldata offset
		opPUSH1, 0x20, // [32, 0, n]        memory offset
		opCALLDATACOPY, // mem[32:32+n] = calldata
		opCALLER,       // [caller]
		opPUSH32,       // [ping, caller]
	}
	code = append(code, PingTopic.Bytes()...)
	code = append(code,
		opCALLDATASIZE, // [n, ping, caller]
		opPUSH1, 0x20,  // [32, n, ping, caller]
		opADD,         // [32+n, ping, caller]
		opPUSH1, 0x00, // [0, 32+n, ping, caller]
		opLOG2,        // log mem[0:32+n] with topics ping, caller
		opNUMBER,      // [number]
		opPUSH1, 0x00, // [0, number]
		opMSTORE, // mem[0:32] = number
		opPUSH32, // [tick]
	)
	code = append(code, TickTopic.Bytes()...)
	code = append(code,
		opPUSH1, 0x20, // [32, tick]
		opPUSH1, 0x00, // [0, 32, tick]
		opLOG1, // log mem[0:32] with topic tick
		opSTOP,
	)
	return code
}

// initCodeLen is the length of the constructor below, which is where the
// runtime code starts in the creation bytecode.
const initCodeLen = 11

// creationCode is the deployment bytecode: a constructor that copies the
// runtime code (appended after it) into memory and returns it.
func creationCode() []byte {
	rt := runtimeCode()
	if len(rt) > 0xff {
		panic("loadgen: runtime code too long for PUSH1")
	}
	code := []byte{
		opPUSH1, byte(len(rt)), // [L]
		opDUP1,               // [L, L]
		opPUSH1, initCodeLen, // [11, L, L]     code offset
		opPUSH1, 0x00, // [0, 11, L, L]  memory offset
		opCODECOPY,    // mem[0:L] = code[11:11+L]; [L]
		opPUSH1, 0x00, // [0, L]
		opRETURN, // return mem[0:L]
	}
	if len(code) != initCodeLen {
		panic("loadgen: constructor length changed; update initCodeLen")
	}
	return append(code, rt...)
}

// RuntimeCode is what eth_getCode returns for a deployed emitter.
func RuntimeCode() []byte { return runtimeCode() }
