package ens_test

import (
	"errors"
	"fmt"

	"github.com/agentstate/agentstate/ens"
)

func ExampleNormalize() {
	for _, name := range []string{"Lumen.ETH", "ＡＧＥＮＴ.eth", "a b.eth"} {
		norm, err := ens.Normalize(name)
		fmt.Printf("%q %q %v\n", norm, name, errors.Is(err, ens.ErrInvalidName))
	}
	// Output:
	// "lumen.eth" "Lumen.ETH" false
	// "agent.eth" "ＡＧＥＮＴ.eth" false
	// "" "a b.eth" true
}

func ExampleNamehash() {
	norm, err := ens.Normalize("Foo.ETH")
	if err != nil {
		panic(err)
	}
	fmt.Printf("%x\n", ens.Namehash(norm))
	// Output:
	// de9b09fd7c5f901e23a3f19fecc54828e9c848539801e86591bd9801b019f84f
}
