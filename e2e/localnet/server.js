'use strict';
// A small Solana JSON-RPC server over LiteSVM, for tests.
//
//   node e2e/localnet/server.js --port 0 [--parent-stdin] [--finalize-slots N]
//
// Listens on 127.0.0.1 and prints exactly one line, `listening 127.0.0.1:<port>`,
// to stdout once ready. Transactions are executed by the real SPL Token,
// Associated Token Account, Memo, System and ComputeBudget programs that
// LiteSVM ships, so a transaction accepted here was accepted by those programs
// byte for byte. With --parent-stdin the server exits when its stdin closes,
// so it never outlives the process that started it. A transaction is
// reported confirmed until N more slots (transactions) have passed, then
// finalized (--finalize-slots, default 0: finalized at once).
//
// Answers follow the shapes of the real Solana RPC closely enough for
// github.com/gagliardetto/solana-go's rpc client (strict decoding).
// simulateTransaction reports LiteSVM's computeUnitsConsumed as unitsConsumed;
// getRecentPrioritizationFees lists, per slot of the last 150, the compute
// unit price of the transaction that landed in it, when it wrote one of the
// given accounts (or any, with none given); slots with no such transaction
// are left out, where a real node would list the block's minimum.
// getTransaction answers a landed transaction with LiteSVM's log messages and
// compute units, its fee and the lamports of its message's accounts before
// and after it (inner instructions, token balances and rewards are empty
// lists). Test-only methods: localnet_createMint, localnet_mintTo,
// localnet_expireBlockhash.

const http = require('node:http');
const crypto = require('node:crypto');
const { LiteSVM, TransactionMetadata, FailedTransactionMetadata } = require('litesvm');
const kit = require('@solana/kit');

const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
const TOKEN_2022_PROGRAM = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb';
const ATA_PROGRAM = 'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL';
const SYSTEM_PROGRAM = '11111111111111111111111111111111';
const MINT_LEN = 82;
const TOKEN_ACCOUNT_LEN = 165;
const U64_MAX = (1n << 64n) - 1n;
const RENT_EXEMPT_EPOCH = U64_MAX; // what the real RPC reports for rent-exempt accounts
const BLOCKHASH_VALIDITY = 150n;
const COMPUTE_BUDGET_PROGRAM = 'ComputeBudget111111111111111111111111111111';
const PRIORITIZATION_FEE_SLOTS = 150n; // what a node's prioritization-fee cache holds
const LAMPORTS_PER_SIGNATURE = 5000n;
// The compute budget of a transaction without SetComputeUnitLimit: each
// instruction of a builtin program adds 3,000 units, any other 200,000.
const BUILTIN_PROGRAMS = new Set([COMPUTE_BUDGET_PROGRAM, SYSTEM_PROGRAM]);
const UNITS_PER_BUILTIN = 3000n;
const UNITS_PER_INSTRUCTION = 200000n;
const MAX_COMPUTE_UNITS = 1400000n;

// Names of LiteSVM's fieldless error enums (const enums: absent at run time),
// in declaration order, from litesvm/dist/internal.d.ts.
const TX_ERRORS = ('AccountInUse AccountLoadedTwice AccountNotFound ProgramAccountNotFound ' +
  'InsufficientFundsForFee InvalidAccountForFee AlreadyProcessed BlockhashNotFound CallChainTooDeep ' +
  'MissingSignatureForFee InvalidAccountIndex SignatureFailure InvalidProgramForExecution SanitizeFailure ' +
  'ClusterMaintenance AccountBorrowOutstanding WouldExceedMaxBlockCostLimit UnsupportedVersion ' +
  'InvalidWritableAccount WouldExceedMaxAccountCostLimit WouldExceedAccountDataBlockLimit TooManyAccountLocks ' +
  'AddressLookupTableNotFound InvalidAddressLookupTableOwner InvalidAddressLookupTableData ' +
  'InvalidAddressLookupTableIndex InvalidRentPayingAccount WouldExceedMaxVoteCostLimit ' +
  'WouldExceedAccountDataTotalLimit MaxLoadedAccountsDataSizeExceeded ResanitizationNeeded ' +
  'InvalidLoadedAccountsDataSizeLimit UnbalancedTransaction ProgramCacheHitMaxLimit CommitCancelled').split(' ');
const IX_ERRORS = ('GenericError InvalidArgument InvalidInstructionData InvalidAccountData AccountDataTooSmall ' +
  'InsufficientFunds IncorrectProgramId MissingRequiredSignature AccountAlreadyInitialized UninitializedAccount ' +
  'UnbalancedInstruction ModifiedProgramId ExternalAccountLamportSpend ExternalAccountDataModified ' +
  'ReadonlyLamportChange ReadonlyDataModified DuplicateAccountIndex ExecutableModified RentEpochModified ' +
  'NotEnoughAccountKeys AccountDataSizeChanged AccountNotExecutable AccountBorrowFailed AccountBorrowOutstanding ' +
  'DuplicateAccountOutOfSync InvalidError ExecutableDataModified ExecutableLamportChange ' +
  'ExecutableAccountNotRentExempt UnsupportedProgramId CallDepth MissingAccount ReentrancyNotAllowed ' +
  'MaxSeedLengthExceeded InvalidSeeds InvalidRealloc ComputationalBudgetExceeded PrivilegeEscalation ' +
  'ProgramEnvironmentSetupFailure ProgramFailedToComplete ProgramFailedToCompile Immutable IncorrectAuthority ' +
  'AccountNotRentExempt InvalidAccountOwner ArithmeticOverflow UnsupportedSysvar IllegalOwner ' +
  'MaxAccountsDataAllocationsExceeded MaxAccountsExceeded MaxInstructionTraceLengthExceeded ' +
  'BuiltinProgramsMustConsumeComputeUnits BorshIoError').split(' ');
// The Display text of the common errors, as the real RPC prints them.
const TX_ERROR_TEXT = {
  AccountInUse: 'Account in use',
  AccountLoadedTwice: 'Account loaded twice',
  AccountNotFound: 'Attempt to debit an account but found no record of a prior credit.',
  ProgramAccountNotFound: 'Attempt to load a program that does not exist',
  InsufficientFundsForFee: 'Insufficient funds for fee',
  InvalidAccountForFee: 'This account may not be used to pay transaction fees',
  AlreadyProcessed: 'This transaction has already been processed',
  BlockhashNotFound: 'Blockhash not found',
  MissingSignatureForFee: 'Transaction requires a fee but has no signature present',
  InvalidAccountIndex: 'Transaction contains an invalid account reference',
  SignatureFailure: 'Transaction did not pass signature verification',
  InvalidProgramForExecution: 'This program may not be used for executing instructions',
  SanitizeFailure: 'Transaction failed to sanitize accounts offsets correctly',
  UnsupportedVersion: 'Transaction version is unsupported',
  InvalidWritableAccount: 'Transaction loads a writable account that cannot be written',
  TooManyAccountLocks: 'Transaction locked too many accounts',
  InvalidRentPayingAccount: 'Transaction leaves an account with a lower balance than rent-exempt minimum',
};
const IX_ERROR_TEXT = {
  GenericError: 'generic instruction error',
  InvalidArgument: 'invalid program argument',
  InvalidInstructionData: 'invalid instruction data',
  InvalidAccountData: 'invalid account data for instruction',
  AccountDataTooSmall: 'account data too small for instruction',
  InsufficientFunds: 'insufficient funds for instruction',
  IncorrectProgramId: 'incorrect program id for instruction',
  MissingRequiredSignature: 'missing required signature for instruction',
  AccountAlreadyInitialized: 'instruction requires an uninitialized account',
  UninitializedAccount: 'instruction requires an initialized account',
  UnbalancedInstruction: 'sum of account balances before and after instruction do not match',
  NotEnoughAccountKeys: 'insufficient account keys for instruction',
  ComputationalBudgetExceeded: 'Computational budget exceeded',
  PrivilegeEscalation: 'Cross-program invocation with unauthorized signer or writable account',
  InvalidAccountOwner: 'Invalid account owner',
  ArithmeticOverflow: 'Program arithmetic overflowed',
  IllegalOwner: 'Provided owner is not allowed',
  InvalidSeeds: 'Provided seeds do not result in a valid address',
};

class RpcError extends Error {
  constructor(code, message, data) {
    super(message);
    this.code = code;
    this.data = data;
  }
}
const invalidParams = (msg) => new RpcError(-32602, msg);

// ---- state ----------------------------------------------------------------

const svm = new LiteSVM();
let slot = 1n; // advances by one per accepted transaction (or airdrop); the block height
let blockhashSlot = slot; // when LiteSVM's latest blockhash was made
const processed = new Map(); // base58 signature -> slot
// slot -> { price, writable }: the compute unit price (micro-lamports) of the
// transaction that landed in it and the accounts it wrote.
const landed = new Map();
// base58 signature -> what getTransaction answers for the transaction that
// landed with it (airdrops have none).
const transactions = new Map();

// Advances the slot by n, expiring the latest blockhash once the height has
// passed its last valid one, so that "not seen and past lastValidBlockHeight"
// means "never lands" here as on a cluster.
function advance(n) {
  slot += n;
  if (slot > blockhashSlot + BLOCKHASH_VALIDITY) {
    svm.expireBlockhash();
    blockhashSlot = slot;
  }
}

const b58enc = kit.getBase58Encoder(); // base58 string -> bytes
const b58dec = kit.getBase58Decoder(); // bytes -> base58 string
const addrCodec = kit.getAddressCodec();
const txDecoder = kit.getTransactionDecoder();
const messageDecoder = kit.getCompiledTransactionMessageDecoder();

// ---- helpers --------------------------------------------------------------

function ctx(value) {
  return { context: { slot, apiVersion: '2.2.0' }, value };
}

function addressParam(v, what) {
  if (typeof v !== 'string' || !kit.isAddress(v)) {
    throw invalidParams(`Invalid param: ${what || 'address'} is not a valid base58 public key`);
  }
  return kit.address(v);
}

function u64Param(v, what) {
  let n;
  try {
    if (typeof v === 'number' && Number.isInteger(v) && v >= 0) n = BigInt(v);
    else if (typeof v === 'string' && /^[0-9]+$/.test(v)) n = BigInt(v);
    else if (typeof v === 'bigint') n = v;
  } catch (_) { /* fall through */ }
  if (n === undefined || n < 0n || n > U64_MAX) throw invalidParams(`Invalid param: ${what} must be a u64`);
  return n;
}

function readU64(data, off) {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength).readBigUInt64LE(off);
}

function getAccount(addr) {
  const acc = svm.getAccount(addr);
  return acc.exists ? acc : null;
}

function setAccount(addr, lamports, data, owner, executable) {
  svm.setAccount({
    address: addr,
    lamports: kit.lamports(lamports),
    data: data,
    programAddress: kit.address(owner),
    executable: !!executable,
    space: BigInt(data.length),
  });
}

function isTokenProgram(owner) {
  return owner === TOKEN_PROGRAM || owner === TOKEN_2022_PROGRAM;
}

// Formats a raw token amount with its decimals, trailing zeros trimmed, like
// the RPC's uiAmountString.
function uiAmountString(amount, decimals) {
  if (decimals === 0) return amount.toString();
  const s = amount.toString().padStart(decimals + 1, '0');
  const whole = s.slice(0, s.length - decimals);
  const frac = s.slice(s.length - decimals).replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : whole;
}

function ixErrorJSON(e) {
  if (typeof e === 'number') return IX_ERRORS[e] || `InstructionError${e}`;
  if (e && typeof e.code === 'number') return { Custom: e.code };
  if (e && typeof e.msg === 'string') return { BorshIoError: e.msg };
  return String(e);
}

function ixErrorText(e) {
  if (typeof e === 'number') {
    const name = IX_ERRORS[e];
    return IX_ERROR_TEXT[name] || name || `instruction error ${e}`;
  }
  if (e && typeof e.code === 'number') return `custom program error: 0x${e.code.toString(16)}`;
  if (e && typeof e.msg === 'string') return `Failed to serialize or deserialize account data: ${e.msg}`;
  return String(e);
}

// Converts a LiteSVM transaction error to the RPC's JSON form and its text.
function txError(err) {
  if (typeof err === 'number') {
    const name = TX_ERRORS[err] || `TransactionError${err}`;
    return { json: name, text: TX_ERROR_TEXT[name] || name, name };
  }
  if (err && typeof err.index === 'number' && typeof err.err === 'function') {
    const inner = err.err();
    return {
      json: { InstructionError: [err.index, ixErrorJSON(inner)] },
      text: `Error processing Instruction ${err.index}: ${ixErrorText(inner)}`,
      name: 'InstructionError',
    };
  }
  if (err && typeof err.index === 'number') {
    return {
      json: { DuplicateInstruction: err.index },
      text: `Transaction contains a duplicate instruction (${err.index}) that is not allowed`,
      name: 'DuplicateInstruction',
    };
  }
  if (err && typeof err.accountIndex === 'number') {
    const s = String(err);
    const name = /Restricted/.test(s) ? 'ProgramExecutionTemporarilyRestricted' : 'InsufficientFundsForRent';
    return { json: { [name]: { account_index: err.accountIndex } }, text: `${name} (account ${err.accountIndex})`, name };
  }
  return { json: String(err), text: String(err), name: 'Unknown' };
}

function simulationFailed(text, errJSON, meta) {
  let logs = [];
  let units = 0n;
  try {
    if (meta) {
      logs = meta.logs();
      units = meta.computeUnitsConsumed();
    }
  } catch (_) { /* keep defaults */ }
  return new RpcError(-32002, `Transaction simulation failed: ${text}`, {
    accounts: null,
    err: errJSON,
    innerInstructions: null,
    logs,
    replacementBlockhash: null,
    returnData: null,
    unitsConsumed: units,
  });
}

// simulation is a simulateTransaction value: the error (null when it ran
// through), the logs and the compute units LiteSVM metered.
function simulation(errJSON, meta) {
  let logs = null;
  let units = 0n;
  try {
    if (meta) {
      logs = meta.logs();
      units = meta.computeUnitsConsumed();
    }
  } catch (_) { /* keep defaults */ }
  return { err: errJSON, logs, accounts: null, unitsConsumed: units, returnData: null, innerInstructions: null, replacementBlockhash: null };
}

function decodeWire(str, encoding) {
  if (typeof str !== 'string') throw invalidParams('Invalid params: transaction must be an encoded string');
  let bytes;
  if (encoding === 'base64') {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(str)) throw invalidParams('invalid base64 encoding');
    bytes = Buffer.from(str, 'base64');
  } else if (encoding === 'base58' || encoding === undefined) {
    try {
      bytes = b58enc.encode(str);
    } catch (e) {
      throw invalidParams(`invalid base58 encoding: ${e.message}`);
    }
  } else {
    throw invalidParams(`unsupported encoding: ${encoding}. Supported encodings: base58, base64`);
  }
  return new Uint8Array(bytes);
}

// priceAndWritable reads a transaction's SetComputeUnitPrice (0 without one)
// and the accounts its message marks writable.
function priceAndWritable(tx) {
  const msg = messageDecoder.decode(tx.messageBytes);
  const keys = msg.staticAccounts;
  const h = msg.header;
  const writable = keys.filter((_k, i) => (i < h.numSignerAccounts
    ? i < h.numSignerAccounts - h.numReadonlySignerAccounts
    : i < keys.length - h.numReadonlyNonSignerAccounts));
  let price = 0n;
  for (const ix of msg.instructions) {
    const data = ix.data || new Uint8Array(0);
    if (keys[ix.programAddressIndex] === COMPUTE_BUDGET_PROGRAM && data.length === 9 && data[0] === 3) {
      price = readU64(data, 1);
    }
  }
  return { price, writable };
}

// feeOf is what a transaction's fee payer is charged: 5,000 lamports a
// signature and its compute unit price times its compute unit limit.
function feeOf(msg) {
  const keys = msg.staticAccounts;
  let limit;
  let price = 0n;
  let builtins = 0n;
  for (const ix of msg.instructions) {
    const program = keys[ix.programAddressIndex];
    const data = ix.data || new Uint8Array(0);
    if (BUILTIN_PROGRAMS.has(program)) builtins++;
    if (program !== COMPUTE_BUDGET_PROGRAM) continue;
    if (data.length === 5 && data[0] === 2) limit = BigInt(Buffer.from(data).readUInt32LE(1));
    if (data.length === 9 && data[0] === 3) price = readU64(data, 1);
  }
  if (limit === undefined) {
    const others = BigInt(msg.instructions.length) - builtins;
    limit = others * UNITS_PER_INSTRUCTION + builtins * UNITS_PER_BUILTIN;
    if (limit > MAX_COMPUTE_UNITS) limit = MAX_COMPUTE_UNITS;
  }
  return BigInt(msg.header.numSignerAccounts) * LAMPORTS_PER_SIGNATURE + (limit * price + 999999n) / 1000000n;
}

function balancesOf(keys) {
  return keys.map((k) => {
    const acc = getAccount(k);
    return acc ? acc.lamports : 0n;
  });
}

// wireSignatures reads the signatures at the head of a wire transaction (a
// compact-u16 count, then 64 bytes each), in the order of its signers.
function wireSignatures(bytes) {
  let count = 0;
  let off = 0;
  for (let shift = 0; ; shift += 7) {
    const b = bytes[off++];
    count |= (b & 0x7f) << shift;
    if (!(b & 0x80)) break;
  }
  const out = [];
  for (let i = 0; i < count; i++) out.push(b58dec.decode(bytes.slice(off + 64 * i, off + 64 * (i + 1))));
  return out;
}

// jsonTransaction is a wire transaction in getTransaction's json encoding.
function jsonTransaction(bytes, msg) {
  const message = {
    header: {
      numRequiredSignatures: msg.header.numSignerAccounts,
      numReadonlySignedAccounts: msg.header.numReadonlySignerAccounts,
      numReadonlyUnsignedAccounts: msg.header.numReadonlyNonSignerAccounts,
    },
    accountKeys: msg.staticAccounts,
    recentBlockhash: msg.lifetimeToken,
    instructions: msg.instructions.map((ix) => ({
      programIdIndex: ix.programAddressIndex,
      accounts: ix.accountIndices || [],
      data: b58dec.decode(ix.data || new Uint8Array(0)),
      stackHeight: null,
    })),
  };
  if (msg.version !== 'legacy') {
    message.addressTableLookups = (msg.addressTableLookups || []).map((l) => ({
      accountKey: l.lookupTableAddress,
      writableIndexes: l.writableIndexes,
      readonlyIndexes: l.readonlyIndexes,
    }));
  }
  return { signatures: wireSignatures(bytes), message };
}

function decodeTransaction(bytes) {
  try {
    return txDecoder.decode(bytes);
  } catch (e) {
    throw invalidParams(`failed to deserialize solana_transaction::versioned::VersionedTransaction: ${e.message}`);
  }
}

// ---- methods --------------------------------------------------------------

const methods = {
  getHealth: () => 'ok',

  getVersion: () => ({ 'solana-core': '2.2.0-litesvm-1.5.0', 'feature-set': 0 }),

  getSlot: () => slot,

  // The finalized height is finalizeSlots behind, as statuses are.
  getBlockHeight: (params) => {
    const cfg = (params && params[0]) || {};
    if (cfg.commitment === 'finalized') return slot > args.finalizeSlots ? slot - args.finalizeSlots : 0n;
    return slot;
  },

  // At finalized the height is finalizeSlots behind (the hash is the newest
  // all the same: nothing builds on a finalized one here).
  getLatestBlockhash: (params) => {
    const cfg = (params && params[0]) || {};
    const finalized = slot > args.finalizeSlots ? slot - args.finalizeSlots : 0n;
    return ctx({
      blockhash: svm.latestBlockhash(),
      lastValidBlockHeight: (cfg.commitment === 'finalized' ? finalized : blockhashSlot) + BLOCKHASH_VALIDITY,
    });
  },

  isBlockhashValid: (params) => {
    const bh = params[0];
    if (typeof bh !== 'string') throw invalidParams('Invalid param: blockhash must be a string');
    return ctx(bh === svm.latestBlockhash());
  },

  getMinimumBalanceForRentExemption: (params) => {
    const len = u64Param(params[0] === undefined ? 0 : params[0], 'data length');
    return svm.minimumBalanceForRentExemption(len);
  },

  getBalance: (params) => {
    const acc = getAccount(addressParam(params[0]));
    return ctx(acc ? acc.lamports : 0n);
  },

  getAccountInfo: (params) => {
    const addr = addressParam(params[0]);
    const cfg = params[1] || {};
    const acc = getAccount(addr);
    if (!acc) return ctx(null);
    let data = acc.data;
    if (cfg.dataSlice && typeof cfg.dataSlice === 'object') {
      const off = Number(cfg.dataSlice.offset || 0);
      const len = Number(cfg.dataSlice.length || 0);
      data = data.slice(off, off + len);
    }
    const encoded = cfg.encoding === 'base58' || cfg.encoding === 'binary'
      ? [b58dec.decode(data), 'base58']
      : [Buffer.from(data).toString('base64'), 'base64'];
    return ctx({
      data: encoded,
      executable: acc.executable,
      lamports: acc.lamports,
      owner: acc.programAddress,
      rentEpoch: RENT_EXEMPT_EPOCH,
      space: BigInt(acc.data.length),
    });
  },

  getTokenAccountBalance: (params) => {
    const acc = getAccount(addressParam(params[0]));
    if (!acc) throw invalidParams('Invalid param: could not find account');
    if (!isTokenProgram(acc.programAddress) || acc.data.length < TOKEN_ACCOUNT_LEN || acc.data[108] === 0) {
      throw invalidParams('Invalid param: not a Token account');
    }
    const mintAddr = addrCodec.decode(acc.data.slice(0, 32));
    const mint = getAccount(mintAddr);
    if (!mint || mint.data.length < MINT_LEN) throw invalidParams('Invalid param: could not find mint');
    const decimals = mint.data[44];
    const amount = readU64(acc.data, 64);
    const ui = uiAmountString(amount, decimals);
    return ctx({ amount: amount.toString(), decimals, uiAmount: Number(ui), uiAmountString: ui });
  },

  getSignatureStatuses: (params) => {
    const sigs = params[0];
    if (!Array.isArray(sigs)) throw invalidParams('Invalid params: expected an array of signatures');
    return ctx(sigs.map((s) => {
      const at = typeof s === 'string' ? processed.get(s) : undefined;
      if (at === undefined) return null;
      const status = slot >= at + args.finalizeSlots ? 'finalized' : 'confirmed';
      return { slot: at, confirmations: null, err: null, confirmationStatus: status, status: { Ok: null } };
    }));
  },

  sendTransaction: (params) => {
    const cfg = params[1] || {};
    const wire = decodeWire(params[0], cfg.encoding);
    const tx = decodeTransaction(wire);
    const msg = messageDecoder.decode(tx.messageBytes);
    const preBalances = balancesOf(msg.staticAccounts);
    // Preflight, as the real RPC does: a transaction that would fail is
    // refused without touching state. (LiteSVM's sendTransaction alone would
    // charge the fee of a failing transaction and remember its signature.)
    // skipPreflight is deliberately ignored so a refusal never leaves a trace.
    let res;
    try {
      const sim = svm.simulateTransaction(tx);
      res = sim instanceof FailedTransactionMetadata ? sim : svm.sendTransaction(tx);
    } catch (e) {
      // kit refuses transactions with an all-zero (missing) signature before
      // LiteSVM sees them; the real RPC answers a failed verification so.
      if (kit.isSolanaError(e, kit.SOLANA_ERROR__TRANSACTION__SIGNATURES_MISSING)) {
        throw new RpcError(-32003, 'Transaction signature verification failure');
      }
      throw invalidParams(`invalid transaction: ${e && e.message}`);
    }
    if (res instanceof FailedTransactionMetadata) {
      const e = txError(res.err());
      if (e.name === 'SignatureFailure') throw new RpcError(-32003, 'Transaction signature verification failure');
      throw simulationFailed(e.text, e.json, res.meta());
    }
    if (!(res instanceof TransactionMetadata)) throw new RpcError(-32603, 'Internal error: unexpected LiteSVM result');
    const sig = b58dec.decode(res.signature());
    advance(1n);
    processed.set(sig, slot);
    transactions.set(sig, {
      wire,
      msg,
      slot,
      blockTime: Math.floor(Date.now() / 1000),
      fee: feeOf(msg),
      logs: res.logs(),
      units: res.computeUnitsConsumed(),
      preBalances,
      postBalances: balancesOf(msg.staticAccounts),
    });
    landed.set(slot, priceAndWritable(tx));
    landed.delete(slot - PRIORITIZATION_FEE_SLOTS);
    return sig;
  },

  // [signature, {encoding, commitment, maxSupportedTransactionVersion}]:
  // null for a signature that did not land, or not at the commitment asked
  // (finalized unless confirmed is asked, as on a cluster). Without
  // maxSupportedTransactionVersion the version is left out and a versioned
  // transaction refused, as the real RPC does for clients that predate them.
  getTransaction: (params) => {
    const sig = params[0];
    if (typeof sig !== 'string' || !/^[1-9A-HJ-NP-Za-km-z]{64,88}$/.test(sig)) {
      throw invalidParams('Invalid param: Invalid signature');
    }
    const cfg = typeof params[1] === 'string' ? { encoding: params[1] } : params[1] || {};
    const commitment = cfg.commitment || 'finalized';
    if (commitment === 'processed') throw invalidParams('Method does not support commitment below `confirmed`');
    if (commitment !== 'confirmed' && commitment !== 'finalized') {
      throw invalidParams(`Invalid params: unknown commitment ${commitment}`);
    }
    const encoding = cfg.encoding || 'json';
    if (!['json', 'base58', 'base64'].includes(encoding)) {
      throw invalidParams(`Invalid params: unsupported encoding ${encoding}. Supported encodings: base58, base64, json`);
    }
    const t = transactions.get(sig);
    if (!t) return null;
    if (commitment === 'finalized' && slot < t.slot + args.finalizeSlots) return null;
    const version = t.msg.version;
    const max = cfg.maxSupportedTransactionVersion;
    if (version !== 'legacy' && (max === undefined || max === null || version > max)) {
      throw new RpcError(-32015, `Transaction version (${version}) is not supported by the requesting client. ` +
        `Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": ${version}`);
    }
    let transaction;
    if (encoding === 'base64') transaction = [Buffer.from(t.wire).toString('base64'), 'base64'];
    else if (encoding === 'base58') transaction = [b58dec.decode(t.wire), 'base58'];
    else transaction = jsonTransaction(t.wire, t.msg);
    const out = {
      slot: t.slot,
      transaction,
      meta: {
        err: null,
        status: { Ok: null },
        fee: t.fee,
        preBalances: t.preBalances,
        postBalances: t.postBalances,
        innerInstructions: [],
        logMessages: t.logs,
        preTokenBalances: [],
        postTokenBalances: [],
        rewards: [],
        loadedAddresses: { writable: [], readonly: [] },
        computeUnitsConsumed: t.units,
      },
      blockTime: t.blockTime,
    };
    if (max !== undefined && max !== null) out.version = version;
    return out;
  },

  // [encodedTx, {encoding, sigVerify, replaceRecentBlockhash}]: runs the
  // transaction without keeping anything. Signatures are checked only with
  // sigVerify, so an unsigned message can be measured; the blockhash is
  // checked unless replaceRecentBlockhash (the message itself is not
  // rewritten here: it runs as it is).
  simulateTransaction: (params) => {
    const cfg = params[1] || {};
    if (cfg.sigVerify && cfg.replaceRecentBlockhash) {
      throw invalidParams('Invalid params: sigVerify may not be used with replaceRecentBlockhash');
    }
    const tx = decodeTransaction(decodeWire(params[0], cfg.encoding));
    let res;
    try {
      svm.withSigverify(!!cfg.sigVerify);
      if (cfg.replaceRecentBlockhash) svm.withBlockhashCheck(false);
      res = svm.simulateTransaction(tx);
    } catch (e) {
      if (kit.isSolanaError(e, kit.SOLANA_ERROR__TRANSACTION__SIGNATURES_MISSING)) {
        return ctx(simulation('SignatureFailure', null));
      }
      throw invalidParams(`invalid transaction: ${e && e.message}`);
    } finally {
      svm.withSigverify(true);
      svm.withBlockhashCheck(true);
    }
    if (res instanceof FailedTransactionMetadata) return ctx(simulation(txError(res.err()).json, res.meta()));
    const out = simulation(null, res.meta());
    if (cfg.replaceRecentBlockhash) {
      out.replacementBlockhash = { blockhash: svm.latestBlockhash(), lastValidBlockHeight: blockhashSlot + BLOCKHASH_VALIDITY };
    }
    return ctx(out);
  },

  // [[address, ...]?]
  getRecentPrioritizationFees: (params) => {
    const wanted = (params[0] || []).map((a) => addressParam(a, 'account'));
    if (wanted.length > 128) throw invalidParams('Invalid params: too many accounts provided; max 128');
    const out = [];
    for (const [at, t] of [...landed.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
      if (at + PRIORITIZATION_FEE_SLOTS <= slot) continue;
      if (wanted.length === 0 || wanted.some((a) => t.writable.includes(a))) out.push({ slot: at, prioritizationFee: t.price });
    }
    return out;
  },

  // Credits lamports directly (LiteSVM's own airdrop is a real transfer that
  // would be refused as AlreadyProcessed when repeated with the same amount).
  requestAirdrop: (params) => {
    const addr = addressParam(params[0]);
    const lamports = u64Param(params[1], 'lamports');
    const acc = getAccount(addr);
    if (acc) setAccount(addr, acc.lamports + lamports, acc.data, acc.programAddress, acc.executable);
    else setAccount(addr, lamports, new Uint8Array(0), SYSTEM_PROGRAM, false);
    const sig = b58dec.decode(crypto.randomBytes(64));
    advance(1n);
    processed.set(sig, slot);
    return sig;
  },

  // [mintAddress, decimals, mintAuthorityAddress, freezeAuthorityAddress?]
  localnet_createMint: (params) => {
    const mint = addressParam(params[0], 'mint');
    const decimals = params[1];
    if (!Number.isInteger(decimals) || decimals < 0 || decimals > 255) throw invalidParams('Invalid param: decimals must be a u8');
    const authority = addressParam(params[2], 'mint authority');
    const data = new Uint8Array(MINT_LEN);
    const dv = new DataView(data.buffer);
    dv.setUint32(0, 1, true); // COption::Some
    data.set(addrCodec.encode(authority), 4);
    dv.setBigUint64(36, 0n, true); // supply
    data[44] = decimals;
    data[45] = 1; // is_initialized
    if (params[3] !== undefined && params[3] !== null) {
      dv.setUint32(46, 1, true);
      data.set(addrCodec.encode(addressParam(params[3], 'freeze authority')), 50);
    }
    setAccount(mint, svm.minimumBalanceForRentExemption(BigInt(MINT_LEN)), data, TOKEN_PROGRAM, false);
    return mint;
  },

  // [mintAddress, ownerAddress, amount] -> the owner's associated token account
  localnet_mintTo: async (params) => {
    const mint = addressParam(params[0], 'mint');
    const owner = addressParam(params[1], 'owner');
    const amount = u64Param(params[2], 'amount');
    const mintAcc = getAccount(mint);
    if (!mintAcc || mintAcc.programAddress !== TOKEN_PROGRAM || mintAcc.data.length !== MINT_LEN || mintAcc.data[45] !== 1) {
      throw invalidParams('Invalid param: not an initialized SPL Token mint');
    }
    const [ata] = await kit.getProgramDerivedAddress({
      programAddress: kit.address(ATA_PROGRAM),
      seeds: [addrCodec.encode(owner), addrCodec.encode(kit.address(TOKEN_PROGRAM)), addrCodec.encode(mint)],
    });
    const supply = readU64(mintAcc.data, 36) + amount;
    if (supply > U64_MAX) throw invalidParams('Invalid param: mint supply would overflow');
    let data;
    const existing = getAccount(ata);
    if (existing) {
      if (existing.programAddress !== TOKEN_PROGRAM || existing.data.length !== TOKEN_ACCOUNT_LEN) {
        throw invalidParams('Invalid param: associated token address holds a non-token account');
      }
      data = new Uint8Array(existing.data);
      const dv = new DataView(data.buffer);
      dv.setBigUint64(64, readU64(data, 64) + amount, true);
    } else {
      data = new Uint8Array(TOKEN_ACCOUNT_LEN);
      const dv = new DataView(data.buffer);
      data.set(addrCodec.encode(mint), 0);
      data.set(addrCodec.encode(owner), 32);
      dv.setBigUint64(64, amount, true);
      // delegate: COption::None (72..108)
      data[108] = 1; // AccountState::Initialized
      // is_native: None (109..121), delegated_amount 0 (121..129), close_authority: None (129..165)
    }
    const mintData = new Uint8Array(mintAcc.data);
    new DataView(mintData.buffer).setBigUint64(36, supply, true);
    setAccount(mint, mintAcc.lamports, mintData, TOKEN_PROGRAM, false);
    setAccount(ata, svm.minimumBalanceForRentExemption(BigInt(TOKEN_ACCOUNT_LEN)), data, TOKEN_PROGRAM, false);
    return ata;
  },

  localnet_expireBlockhash: () => {
    advance(BLOCKHASH_VALIDITY + 1n);
    return svm.latestBlockhash();
  },
};

// ---- JSON-RPC plumbing ----------------------------------------------------

// JSON.stringify with bigints written as raw number literals (u64 values such
// as rentEpoch 18446744073709551615 must not go through a float).
function stringify(v) {
  const marks = [];
  const s = JSON.stringify(v, (_k, x) => {
    if (typeof x === 'bigint') {
      marks.push(x.toString());
      return `\u0000big${marks.length - 1}\u0000`;
    }
    return x;
  });
  return s.replace(/"\\u0000big(\d+)\\u0000"/g, (_m, i) => marks[Number(i)]);
}

async function handleOne(req) {
  const id = req && typeof req === 'object' && 'id' in req ? req.id : null;
  if (!req || typeof req !== 'object' || Array.isArray(req) || typeof req.method !== 'string') {
    return { jsonrpc: '2.0', error: { code: -32600, message: 'Invalid request' }, id };
  }
  const fn = Object.prototype.hasOwnProperty.call(methods, req.method) ? methods[req.method] : undefined;
  if (!fn) return { jsonrpc: '2.0', error: { code: -32601, message: 'Method not found' }, id };
  const params = req.params === undefined || req.params === null ? [] : req.params;
  if (!Array.isArray(params)) {
    return { jsonrpc: '2.0', error: { code: -32602, message: 'Invalid params: expected an array' }, id };
  }
  try {
    const result = await fn(params);
    return { jsonrpc: '2.0', result, id };
  } catch (e) {
    if (e instanceof RpcError) {
      if (e.code !== -32002 && e.code !== -32003) process.stderr.write(`${req.method}: ${e.message}\n`);
      const error = { code: e.code, message: e.message };
      if (e.data !== undefined) error.data = e.data;
      return { jsonrpc: '2.0', error, id };
    }
    process.stderr.write(`${req.method}: internal error: ${(e && e.stack) || e}\n`);
    return { jsonrpc: '2.0', error: { code: -32603, message: `Internal error: ${e && e.message}` }, id };
  }
}

const MAX_BODY = 8 << 20;

const server = http.createServer((req, res) => {
  const reply = (status, body) => {
    const text = typeof body === 'string' ? body : stringify(body);
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  };
  if (req.method !== 'POST') {
    reply(405, { jsonrpc: '2.0', error: { code: -32600, message: 'Invalid request: use POST' }, id: null });
    return;
  }
  const chunks = [];
  let size = 0;
  let tooBig = false;
  req.on('data', (c) => {
    size += c.length;
    if (size > MAX_BODY) tooBig = true;
    else chunks.push(c);
  });
  req.on('error', (e) => process.stderr.write(`request error: ${e.message}\n`));
  req.on('end', async () => {
    try {
      if (tooBig) {
        reply(413, { jsonrpc: '2.0', error: { code: -32600, message: 'Request too large' }, id: null });
        return;
      }
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch (e) {
        process.stderr.write(`parse error: ${e.message}\n`);
        reply(200, { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null });
        return;
      }
      if (Array.isArray(body)) {
        if (body.length === 0) {
          reply(200, { jsonrpc: '2.0', error: { code: -32600, message: 'Invalid request' }, id: null });
          return;
        }
        const out = [];
        for (const r of body) out.push(await handleOne(r)); // in order: the SVM is sequential
        reply(200, out);
      } else {
        reply(200, await handleOne(body));
      }
    } catch (e) {
      process.stderr.write(`internal error: ${(e && e.stack) || e}\n`);
      try {
        reply(500, { jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null });
      } catch (_) { /* response already sent */ }
    }
  });
});

function parseArgs(argv) {
  const out = { port: 0, parentStdin: false, finalizeSlots: 0n };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--port') out.port = Number(argv[++i]);
    else if (a.startsWith('--port=')) out.port = Number(a.slice('--port='.length));
    else if (a === '--parent-stdin') out.parentStdin = true;
    else if (a === '--finalize-slots') out.finalizeSlots = BigInt(argv[++i]);
    else {
      process.stderr.write(`unknown argument: ${a}\nusage: node server.js [--port N] [--parent-stdin] [--finalize-slots N]\n`);
      process.exit(2);
    }
  }
  if (!Number.isInteger(out.port) || out.port < 0 || out.port > 65535) {
    process.stderr.write('--port must be an integer between 0 and 65535\n');
    process.exit(2);
  }
  return out;
}

const args = parseArgs(process.argv.slice(2));
process.on('uncaughtException', (e) => process.stderr.write(`uncaught: ${(e && e.stack) || e}\n`));
process.on('unhandledRejection', (e) => process.stderr.write(`unhandled rejection: ${(e && e.stack) || e}\n`));
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
if (args.parentStdin) {
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('close', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
  process.stdin.resume();
}
server.keepAliveTimeout = 60_000;
server.on('error', (e) => {
  process.stderr.write(`server error: ${e.message}\n`);
  process.exit(1);
});
server.listen(args.port, '127.0.0.1', () => {
  process.stdout.write(`listening 127.0.0.1:${server.address().port}\n`);
});
