/**
 * Hosts that are literal non-public IP addresses, in every spelling a URL parser accepts:
 * PUT …/push refuses each at validation whatever PUSH_ALLOW_PRIVATE_TARGETS says.
 */
export const NON_PUBLIC_LITERAL_HOSTS = [
  '127.0.0.1',
  '10.0.0.1',
  '172.16.0.1',
  '192.168.1.1',
  '169.254.1.1',
  '169.254.169.254',
  '100.64.0.1',
  '0.0.0.0',
  '224.0.0.1',
  // IPv4 spelt as one decimal, hex, octal and short forms (the URL parser makes each 127.0.0.1)
  '2130706433',
  '0x7f000001',
  '0x7f.1',
  '0x7f.0.0.1',
  '0177.0.0.1',
  '017700000001',
  '127.1',
  '127.0.1',
  '[::1]',
  '[::]',
  '[0:0:0:0:0:0:0:1]',
  '[fc00::1]',
  '[fd12:3456::1]',
  '[fe80::1]',
  '[ff02::1]',
  // IPv4 inside IPv6: mapped (both spellings), IPv4-compatible, NAT64, 6to4
  '[::ffff:127.0.0.1]',
  '[::ffff:7f00:1]',
  '[::ffff:10.0.0.1]',
  '[::127.0.0.1]',
  '[64:ff9b::7f00:1]',
  '[2002:7f00:1::]',
];
