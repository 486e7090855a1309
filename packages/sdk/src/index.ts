/**
 * @svc/sdk: the runtime-neutral client SDK (browsers and Node 20; WebCrypto, fetch, TextEncoder,
 * ReadableStream only). docs/CRYPTO.md describes the scheme the crypto/ files implement.
 *
 * Layers, lowest first:
 *   crypto/*   one file per primitive or construction, no I/O
 *   ApiClient  one typed method per route, SdkError for every refusal, server-corrected clock
 *   EventStream  the device's event stream: state, ack-after-store in batches, reconnect
 *   Messenger  the account: login/register from a password (or resume a saved session), messages,
 *              rooms and their keys
 */
export { SdkError, isSdkError, type SdkErrorCode, type ClientErrorCode, type NextStep } from './errors.js';
export { ApiClient, errorFrom, type ApiMethods, type ApiOptions, type RequestOptions } from './api.js';
export { cookieFetch, type CookieFetch, type FetchLike } from './cookies.js';
export { ServerClock } from './clock.js';
export { randomBytes, utf8, fromUtf8 } from './bytes.js';
export { SseParser, type SseMessage } from './sse.js';
export { EventStream, type ConnectionState, type CloseReason, type StateInfo, type EventStreamOptions } from './events.js';
export { RoomKeyring, type KeyOrigin, type HeldRoomKey } from './keyring.js';
export {
  Messenger,
  type MessengerOptions,
  type KeyCheck,
  type KeyPurpose,
  type ChatId,
  type DecryptedMessage,
  type DecryptFailure,
  type SentMessage,
  type SendOptions,
} from './messenger.js';
export { splitChatId } from './envelopes.js';
export { Peers } from './peers.js';
export { RoomBook, type RoomGuard, type MemberChange } from './rooms.js';
export { checkSessionState, SESSION_STATE_VERSION, type SessionState } from './session.js';
export { portableSession, resumePortable, type PortableSession } from './portable.js';
export { KeyPins, metaPins, type Pin, type PinStorage } from './key-pins.js';

export { seal, open, importAesKey, IV_BYTES, type Sealed } from './crypto/aead.js';
export { hkdf, sha256 } from './crypto/hkdf.js';
export {
  newKdf,
  checkKdf,
  deriveMaster,
  argon2Js,
  passwordBytes,
  KDF_BOUNDS,
  KDF_DEFAULTS,
  KDF_MIN,
  MASTER_BYTES,
  SALT_BYTES,
  type Kdf,
  type OnProgress,
  type ProgressStage,
  type Argon2Fn,
  type Argon2Input,
  type DeriveOptions,
} from './crypto/kdf.js';
export { argon2id, type Argon2Params } from './crypto/argon2.js';
export { blake2b } from './crypto/argon2.js';
export { deriveAccountKeys, deriveAccountKeyBytes, INFO_AUTH, INFO_ENC, type AccountKeys } from './crypto/keys.js';
export {
  generateIdentity,
  sealIdentity,
  openIdentity,
  openIdentityPkcs8,
  identityMatches,
  importPublicKey,
  IDENTITY_AAD,
  type Identity,
  type NewIdentity,
} from './crypto/identity.js';
export { pairKey, pairKeyBytes, pairSalt, INFO_PAIR } from './crypto/pair.js';
export {
  encryptDm,
  decryptDm,
  encryptRoomMessage,
  decryptRoomMessage,
  dmAad,
  roomAad,
  type DmMeta,
  type RoomMeta,
  type EnvelopeLike,
} from './crypto/message.js';
export {
  encodePlaintext,
  decodePlaintext,
  plaintextBytes,
  textRoom,
  PAD_BLOCK,
  MAX_PADDED_BYTES,
  MAX_EMOJI_CHARS,
  MAX_RECEIPT_IDS,
  type Plain,
  type PlainInput,
  type PlainType,
  type KnownPlain,
  type TextPlain,
  type ReactionPlain,
  type EditPlain,
  type DeletePlain,
  type ReceiptPlain,
  type MembersPlain,
  type PinPlain,
  type TimerPlain,
  type MutePlain,
  type UnknownPlain,
  isHistoryPlain,
  MAX_TRANSFER_CHUNKS,
  type HistoryPlain,
  type HistoryRequestPlain,
  type HistoryOfferPlain,
  type HistoryChunkPlain,
  type HistoryAckPlain,
  type HistoryDonePlain,
} from './wire/plaintext.js';
export { newRoomKey, importRoomKey, wrapRoomKey, unwrapRoomKey, roomKeyAad, type NewRoomKey } from './crypto/roomkey.js';
export { safetyNumber, compareScannedSafetyNumber, type ScanVerdict } from './crypto/safety.js';
export { sealAtRest, openAtRest, deriveHistoryKey, historyKeyBytes, atRestAad, INFO_HISTORY } from './crypto/atrest.js';
export { atRestTag, deriveIndexKey, indexKeyBytes, INFO_INDEX, TAG_BYTES } from './crypto/atrest-index.js';
export { deriveOwnKey, ownKeyBytes, INFO_TRANSFER, INFO_EXPORT } from './crypto/ownkeys.js';

// The conversation layer: message types and their rules, outbox, pacing, receipts (docs/CRYPTO.md, docs/WEB.md).
export { Conversations, EDIT_WINDOW_MS, newMid, type Change, type ConversationsOptions, type HistoryMessage } from './conversation/conversations.js';
export {
  deliveryStatus,
  isShown,
  type ChatMessage,
  type DeliveryStatus,
  type MessageKind,
  type MembershipEvent,
  type PinState,
  type OutboxItem,
  type PendingAction,
  type Priority,
  type SendState,
} from './conversation/model.js';
export { MemoryStore, byTime, type ChatRange, type ConversationStore, type MemorySnapshot } from './conversation/store.js';
export { ingest, applyAction, FAILURE_TEXT, UNKNOWN_TEXT, MAX_REACTIONS_PER_SENDER, type Ingested, type RuleContext } from './conversation/rules.js';
export { WAITING_PER_SENDER_CHAT, WAITING_PER_STRANGER, WAITING_TOTAL, WAITING_TTL_MS, forTarget, type WaitContext } from './conversation/waiting.js';
export { quotedRecord } from './conversation/quote.js';
export { Outbox, RECEIPT_DELAY_MS, type OutboxDeps } from './conversation/outbox.js';
export { Pacer, DEFAULT_MESSAGE_LIMIT, WINDOW_MS, type PacerSnapshot } from './conversation/pacer.js';
export { SearchIndex, fold, searchEntry, type SearchHit } from './conversation/search.js';
export { SearchStore } from './conversation/search-store.js';
export { SEARCH_FORMAT, SEARCH_PART_SIZE, K_SEARCH_MANIFEST, searchPartKey, type SearchStoreOptions } from './conversation/search-parts.js';
export { applyPin, isPinnable, pinnedMessages, pinKey, pinStamp } from './conversation/message-pins.js';
export {
  TIMER_CHOICES,
  TIMER_SECONDS,
  K_EXPIRY_INDEX,
  applyTimer,
  chatTimer,
  deadline,
  expireDue,
  isExpired,
  isTimerSeconds,
  nextExpiry,
  timerKey,
  timerLabel,
  timerText,
  tombstone,
  trackExpiry,
  type Expired,
  type TimerSeconds,
  type TimerSetting,
} from './conversation/disappearing.js';
export { insertMention, mentionCandidates, mentionQuery, mentionsMe, parseMentions } from './conversation/mentions.js';
export {
  ChatMutes,
  MUTE_CHOICES,
  isMuted,
  isUnread,
  moveReadMarker,
  muteKey,
  readKey,
  readMarker,
  shouldNotify,
  unreadOf,
  unreadSince,
  type ChatNotifyState,
  type MuteSetting,
  type ReadMarker,
  type Unread,
  type UnreadSince,
} from './conversation/chat-state.js';
export { Drafts, draftKey, MAX_DRAFT_CHARS } from './conversation/drafts.js';
export { RoomMembers, K_ROOM_MEMBERS, WARN_AFTER_MS, type RoomMembersDeps } from './conversation/room-members.js';
export { waitMessage, type MembershipStatus } from './conversation/membership-status.js';
export {
  applyAnnouncement,
  planChange,
  followOwnerGone,
  settleLeaves,
  sendWait,
  memberChanges,
  compare as compareRecord,
  parseRecord,
  startRecord,
  successor,
  type MembershipRecord,
  type SendWait,
} from './conversation/membership-record.js';
export { RecordTransfer, K_RECORD_ASKS, packRecords } from './conversation/record-transfer.js';

// History on every device: the transfer between the account's devices and the sealed file (docs/CRYPTO.md).
export { HistoryTransfer } from './conversation/transfer.js';
export {
  TRANSFER_KEEP_MS,
  type TransferLink,
  type ArchiveLink,
  type TransferProgress,
  type TransferRequest,
  type TransferEvent,
} from './conversation/transfer-types.js';
export {
  attachTransfer,
  archiveLink,
  messengerLink,
  isTransferRoom,
  TRANSFER_ROOM_NAME,
  type TransferOptions,
} from './conversation/transfer-link.js';
export { ARCHIVE_CHUNK_BYTES } from './conversation/transfer-archive.js';
export {
  exportHistory,
  importHistory,
  openExport,
  exportAad,
  EXPORT_VERSION,
  EXPORT_VERSION_FILES,
  EXPORT_PIECE_BYTES,
  EXPORT_ERRORS,
  EXPORT_INFLATE_MAX,
  type ExportAccount,
  type ExportResult,
  type ExportOptions,
  type ImportResult,
  type OpenedExport,
} from './conversation/export.js';
export { mergeRecords, mergeRecord, type MergeResult } from './conversation/merge.js';
export { checkRecord, isSettled } from './conversation/history-codec.js';

// Files, photos and voice messages: file encryption, upload with resume, checked download (docs/CRYPTO.md).
export {
  padme,
  paddedLength,
  chunkCount,
  cipherSize,
  maxPlainSize,
  newFileKey,
  importFileKey,
  sealChunk,
  openChunk,
  fileAad,
  chunkIv,
  CHUNK_BYTES,
  MIN_PADDED_BYTES,
  FILE_KEY_BYTES,
} from './crypto/file.js';
export {
  isFileName,
  isMime,
  isThumb,
  safeFileName,
  safeMime,
  ATTACHMENT_TYPES,
  MAX_NAME_CHARS,
  MAX_THUMB_BYTES,
  MAX_WAVEFORM,
  type AttachmentType,
  type AttachmentFields,
  type AttachmentRef,
  type PhotoFields,
  type VoiceFields,
} from './wire/attachment-plain.js';
export {
  isAttachmentPlain,
  type ArchivePart,
  type HistoryArchivePlain,
  type AttachmentPlain,
  type FilePlain,
  type PhotoPlain,
  type VoicePlain,
} from './wire/plaintext.js';
export { plainChunks, sourceSize, type BlobLike, type FileSource } from './attachments/source.js';
export {
  Uploader,
  MemoryUploadProgress,
  progressInMeta,
  limitLabel,
  UPLOAD_IN_FLIGHT,
  type UploadState,
  type UploadedFile,
  type UploadProgressStore,
  type UploadOptions,
} from './attachments/upload.js';
export { downloadFile, downloadBytes, fileGone, type FileRef, type DownloadOptions } from './attachments/download.js';
export { MemoryFiles, type AttachmentFiles, type KeptFile, type KeptFilesSource } from './attachments/files.js';
export {
  SealedFiles,
  SealedFile,
  SealedAttachmentFiles,
  MemorySealedRows,
  sealedFileOf,
  KEPT_CHUNK_BYTES,
  type SealedRows,
  type SealedFileInfo,
  type SealedFilesOptions,
} from './attachments/sealed-files.js';
export { AttachmentSender, type SendFileInput, type AttachmentSenderDeps } from './attachments/sender.js';
export { attachmentRecord, attachmentRef } from './attachments/record.js';
export { MAX_RECORDING_MS, maxRecordingMs, peakLevel, voiceDuration, waveformSummary } from './attachments/voice.js';
