// The diagnosis moved to src/doctor/connection.ts; payment-starter.ts (frozen) imports from here.
export { grpcStatus } from './grpc-status';
