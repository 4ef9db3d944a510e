// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {ERC721} from "@openzeppelin/contracts/token/ERC721/ERC721.sol";

// TideToken721 is OpenZeppelin's ERC-721 with minting and burning open to
// anyone: a test collection for local chains only.
contract TideToken721 is ERC721 {
    constructor() ERC721("Tide Deed", "DEED") {}

    function mint(address to, uint256 id) external {
        _mint(to, id);
    }

    function burn(uint256 id) external {
        _burn(id);
    }
}
