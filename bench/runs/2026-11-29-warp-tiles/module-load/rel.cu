// small text, initialized globals holding addresses (relocations), like Rust panic locations
__device__ const char s0[]="crates/xlog-kernels/src/sort.rs";
struct Loc{const char*f; unsigned l,c;};
#define L(n) {s0, n, 1}
__device__ Loc locs[128]={L(1),L(2),L(3),L(4),L(5),L(6),L(7),L(8),L(9),L(10),L(11),L(12),L(13),L(14),L(15),L(16),L(17),L(18),L(19),L(20),L(21),L(22),L(23),L(24),L(25),L(26),L(27),L(28),L(29),L(30),L(31),L(32),L(33),L(34),L(35),L(36),L(37),L(38),L(39),L(40),L(41),L(42),L(43),L(44),L(45),L(46),L(47),L(48),L(49),L(50),L(51),L(52),L(53),L(54),L(55),L(56),L(57),L(58),L(59),L(60),L(61),L(62),L(63),L(64),L(65),L(66),L(67),L(68),L(69),L(70),L(71),L(72),L(73),L(74),L(75),L(76),L(77),L(78),L(79),L(80),L(81),L(82),L(83),L(84),L(85),L(86),L(87),L(88),L(89),L(90),L(91),L(92),L(93),L(94),L(95),L(96)};
extern "C" __global__ void a(int*x){ x[threadIdx.x] += locs[x[0]&127].l + (int)(long)locs[x[1]&127].f; }
