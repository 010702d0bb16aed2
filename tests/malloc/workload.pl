# tests/malloc/workload.pl — Perl hashes, arrays, strings and regular expressions; prints
# figures that depend on every step, compared between allocators.
use strict;
use warnings;
my (%h, $total);
for my $round (1 .. 12) {
    my @words = map { ("p$_-$round" x (1 + $_ % 6)) } 1 .. 10000;
    for my $i (0 .. $#words) {
        $h{substr($words[$i], 0, 10) . ($i % 911)} = [ $words[$i], length $words[$i] ];
    }
    my @keys = grep { /-\d+$/ } sort keys %h;
    delete @h{ @keys[ grep { $_ % 3 == 0 } 0 .. $#keys ] };
    my $text = join ',', map { substr $_, 0, 4 } @words[ grep { $_ % 4 == 0 } 0 .. $#words ];
    my @parts = split /,p/, $text;
    $total += scalar(@parts) + scalar(keys %h) + length $text;
}
print "$total\n";
